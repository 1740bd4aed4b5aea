import type { Bus } from '@jarvis/bus';
import { memorySearch, SearchQuery } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type MemoryRouterDeps = { bus: Bus; pool: Pool };

// /v1/memory: search across everything the user's memory holds.
export function createMemoryRouter(deps: MemoryRouterDeps): Router {
  const router = Router();
  router.post('/search', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(SearchQuery, req.body);
    res.json(await deps.bus.request(memorySearch, { ...query, userId: principal.userId }));
  });
  return router;
}
