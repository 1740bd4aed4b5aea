import { type GatewayHandler, MeChanges } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import { describeMe, setTimeZone } from '../services/me';
import { parseBody } from './parse-body';

export type MeHandlersDeps = {
  pool: Pool;
  // Parses the JSON body within the general limit.
  json: RequestHandler;
  // GRAFANA_URL, told to the web UI for its trace links.
  grafanaUrl: string | undefined;
};

// The key's own user: its name and the time zone schedules and reminders are told in.
export function createMeHandlers(
  deps: MeHandlersDeps,
): Record<Extract<GatewayHandler, 'getMe' | 'updateMe'>, RequestHandler[]> {
  const install = deps.grafanaUrl ? { grafanaUrl: deps.grafanaUrl } : {};
  return {
    getMe: [
      (req, res) => {
        res.json({ user: describeMe(principalOf(req)), ...install });
      },
    ],

    updateMe: [
      deps.json,
      async (req, res) => {
        const { timeZone } = parseBody(MeChanges, req.body);
        res.json({ user: await setTimeZone(deps.pool, principalOf(req), timeZone), ...install });
      },
    ],
  };
}
