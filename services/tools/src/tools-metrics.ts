import type { ChannelType } from '@jarvis/contracts';
import { Counter, type Metrics } from '@jarvis/telemetry';

// sent: the channel took it; failed: given up (not retryable, or out of attempts); retried: an
// attempt failed and another is planned; held: stored to wait for the end of quiet hours.
type DeliveryStatus = 'sent' | 'failed' | 'retried' | 'held';
// ok, or the error code the caller got (timeout, internal, not_found, invalid_request, ...).
type ExecutionStatus = string;

export type ToolsMetrics = {
  countDelivery(channel: ChannelType, status: DeliveryStatus): void;
  countExecution(tool: string, status: ExecutionStatus): void;
};

export function createToolsMetrics(metrics: Metrics): ToolsMetrics {
  const registers = [metrics.registry];
  const deliveries = new Counter({
    name: 'jarvis_notification_deliveries_total',
    help: 'Notification delivery attempts and holds, by channel and status (sent, failed, retried, held).',
    labelNames: ['channel', 'status'],
    registers,
  });
  const executions = new Counter({
    name: 'jarvis_tool_executions_total',
    help: 'Tool calls this service ran for the agent, by tool and status (ok, or the error code).',
    labelNames: ['tool', 'status'],
    registers,
  });
  return {
    countDelivery: (channel, status) => deliveries.inc({ channel, status }),
    countExecution: (tool, status) => executions.inc({ tool, status }),
  };
}
