import type { Pool } from '@jarvis/db';
import {
  activeTraceId,
  Counter,
  Gauge,
  Histogram,
  type Logger,
  type Metrics,
} from '@jarvis/telemetry';
import { countPendingApprovals } from '../repositories/approvals-repository';
import type { NewStep } from '../repositories/steps-repository';

type TurnKind = 'chat' | 'mission_task' | 'scheduled';
// How a turn ended; `paused` is a turn that now waits for its user's approval (it ends later,
// once resumed).
type TurnEnd = 'completed' | 'failed' | 'cancelled' | 'paused';

// One stretch of a turn's work, from the moment it may run to its end or pause: its steps (the
// step recorder hands each one over) and how it ended.
export type TurnMeter = {
  observeStep(step: NewStep): void;
  // A risky call its user denied or did not approve in time: never run, so never a step.
  observeDeniedCall(tool: string): void;
  end(how: TurnEnd): void;
};

export type AgentMetrics = { startTurn(kind: TurnKind, userId: string): TurnMeter };

// Seconds; a turn is a model call or several, with tools between: up to minutes.
const TURN_BUCKETS = [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];

// The agent's counters on the orchestrator's registry. Users label the token and cost counters:
// a personal install has a handful, and "cost by user" is what the dashboard shows.
export function createAgentMetrics(metrics: Metrics, pool: Pool, logger: Logger): AgentMetrics {
  const registers = [metrics.registry];
  const turns = new Counter({
    name: 'jarvis_turns_total',
    help: 'Turns ended, by kind (chat, mission_task, scheduled) and outcome.',
    labelNames: ['kind', 'outcome'],
    registers,
  });
  // prom-client's typings take an exemplar's labels to be the metric's own: trace_id is declared
  // with them, though only exemplars carry it.
  const turnDuration = new Histogram<'kind' | 'trace_id'>({
    name: 'jarvis_turn_duration_seconds',
    help: 'Time a turn worked, from the moment it could run to its end or its pause for an approval.',
    labelNames: ['kind'],
    buckets: TURN_BUCKETS,
    // Each bucket keeps the trace of its latest turn, which Grafana links to.
    enableExemplars: true,
    registers,
  });
  const modelDuration = new Histogram({
    name: 'jarvis_turn_model_duration_seconds',
    help: "The part of jarvis_turn_duration_seconds spent waiting for the model's answers.",
    labelNames: ['kind'],
    buckets: TURN_BUCKETS,
    registers,
  });
  const toolCalls = new Counter({
    name: 'jarvis_tool_calls_total',
    help: 'Tool calls the agent made, by tool and status (ok, error, denied).',
    labelNames: ['tool', 'status'],
    registers,
  });
  const guardrails = new Counter({
    name: 'jarvis_guardrail_trips_total',
    help: 'Turns a guardrail stopped (max_steps, deadline, budget, output_tokens, repeated_call).',
    labelNames: ['guardrail'],
    registers,
  });
  const tokens = new Counter({
    name: 'jarvis_model_tokens_total',
    help: "Tokens of the agent's model calls, by model, user and type (input, output).",
    labelNames: ['model', 'user', 'type'],
    registers,
  });
  const cost = new Counter({
    name: 'jarvis_model_cost_usd_total',
    help: "Cost in US dollars of the agent's model calls, by model and user.",
    labelNames: ['model', 'user'],
    registers,
  });
  new Gauge({
    name: 'jarvis_approvals_waiting',
    help: 'Risky tool calls waiting for their user to approve or deny them.',
    registers,
    async collect() {
      // The database away must not fail the scrape (the service's up and memory still matter
      // then): the gauge keeps its last value.
      try {
        this.set(await countPendingApprovals(pool));
      } catch (error) {
        logger.debug({ err: error }, 'approvals not counted for metrics');
      }
    },
  });

  return {
    startTurn(kind, userId) {
      const startedAt = process.hrtime.bigint();
      let modelMs = 0;
      return {
        observeStep(step) {
          if (step.kind === 'model') {
            modelMs += step.durationMs;
            // A failed call is named `chat` and has no usage: only answers are counted.
            if (step.status !== 'ok') return;
            tokens.inc({ model: step.name, user: userId, type: 'input' }, step.inputTokens ?? 0);
            tokens.inc({ model: step.name, user: userId, type: 'output' }, step.outputTokens ?? 0);
            cost.inc({ model: step.name, user: userId }, step.costUsd ?? 0);
          } else if (step.kind === 'tool') {
            toolCalls.inc({ tool: step.name, status: step.status });
          } else if (step.kind === 'guardrail' && step.name !== 'cancelled') {
            // The user's cancel is recorded as a guardrail step but is no limit reached: it
            // shows as the turn's outcome `cancelled`.
            guardrails.inc({ guardrail: step.name });
          }
        },
        observeDeniedCall(tool) {
          toolCalls.inc({ tool, status: 'denied' });
        },
        end(how) {
          const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
          const traceId = activeTraceId();
          turnDuration.observe({
            labels: { kind },
            value: seconds,
            exemplarLabels: traceId ? { trace_id: traceId } : {},
          });
          modelDuration.observe({ kind }, modelMs / 1_000);
          if (how !== 'paused') turns.inc({ kind, outcome: how });
        },
      };
    },
  };
}
