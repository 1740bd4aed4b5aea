import type { Bus } from '@jarvis/bus';
import { TurnIdParams, turnCancel } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type TurnsRouterDeps = { bus: Bus; pool: Pool };

// /v1/turns: the key's user's turns while they run.
export function createTurnsRouter(deps: TurnsRouterDeps): Router {
  const router = Router();

  // 202: the turn stops before its next step; its events (or GET /v1/runs/{runId}) tell when.
  router.post('/:turnId/cancel', async (req, res) => {
    const principal = principalOf(req);
    const { turnId } = parseBody(TurnIdParams, req.params);
    res.status(202).json(await deps.bus.request(turnCancel, { userId: principal.userId, turnId }));
  });

  return router;
}
