import type { Bus } from '@jarvis/bus';
import { modelUsage, UsageQuery } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type UsageRouterDeps = { bus: Bus; pool: Pool };

// /v1/usage: the key's user's model usage per day and model, today's totals, the budgets and
// what is left of them. Always the key's own user: the query names no one.
export function createUsageRouter(deps: UsageRouterDeps): Router {
  const router = Router();
  // GET /?from=YYYY-MM-DD&to=YYYY-MM-DD (UTC days; default: the last 30 days)
  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(UsageQuery, req.query);
    res.json(await deps.bus.request(modelUsage, { ...query, userId: principal.userId }));
  });
  return router;
}
