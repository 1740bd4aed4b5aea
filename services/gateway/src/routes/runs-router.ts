import type { Bus } from '@jarvis/bus';
import {
  orchestratorRunsGet,
  orchestratorRunsList,
  RunGetQuery,
  RunIdParams,
  RunsListQuery,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type RunsRouterDeps = { bus: Bus; pool: Pool };

// /v1/runs: what each of the key's user's turns did, step by step. Always the key's own user: the
// queries name no one, and another user's run answers 404 like a missing one (the orchestrator
// decides that; its typed errors are left to the api router's converter).
export function createRunsRouter(deps: RunsRouterDeps): Router {
  const router = Router();

  // GET /?limit=&before=&conversationId=&status= (newest first; before: the last nextBefore)
  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(RunsListQuery, req.query);
    res.json(await deps.bus.request(orchestratorRunsList, { ...query, userId: principal.userId }));
  });

  router.get('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(RunIdParams, req.params);
    parseBody(RunGetQuery, req.query);
    res.json(await deps.bus.request(orchestratorRunsGet, { id, userId: principal.userId }));
  });

  return router;
}
