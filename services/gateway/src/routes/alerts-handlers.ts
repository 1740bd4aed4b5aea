import { type Bus, ensureUserEventStream } from '@jarvis/bus';
import { type GatewayHandler, GrafanaAlertsWebhook } from '@jarvis/contracts';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import { publishOpsAlerts } from '../services/ops-alerts';
import { parseBody } from './parse-body';

export type AlertsHandlersDeps = {
  bus: Bus;
  // Parses the JSON body within the general limit.
  json: RequestHandler;
  // GRAFANA_URL: alerts link into it; unset, they carry no link.
  grafanaUrl: string | undefined;
};

// Grafana's alerts, told to the admin whose key its contact point posts with.
export function createAlertsHandlers(
  deps: AlertsHandlersDeps,
): Record<Extract<GatewayHandler, 'notifyAlerts'>, RequestHandler[]> {
  // Ensured on first use: the gateway may be up before any service that makes the stream.
  let streamReady: Promise<void> | undefined;
  const ensureStream = () => {
    streamReady ??= ensureUserEventStream(deps.bus).catch((error: unknown) => {
      streamReady = undefined;
      throw error;
    });
    return streamReady;
  };

  return {
    notifyAlerts: [
      deps.json,
      async (req, res) => {
        const { alerts } = parseBody(GrafanaAlertsWebhook, req.body);
        await ensureStream();
        await publishOpsAlerts(deps.bus, principalOf(req).userId, alerts, deps.grafanaUrl);
        res.status(202).json({ accepted: alerts.length });
      },
    ],
  };
}
