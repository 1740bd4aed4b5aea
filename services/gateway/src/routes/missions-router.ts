import type { Bus } from '@jarvis/bus';
import {
  MissionFields,
  MissionIdParams,
  MissionsListQuery,
  orchestratorMissionsCancel,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
  orchestratorMissionsList,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type MissionsRouterDeps = { bus: Bus; pool: Pool };

// /v1/missions: objectives the key's user gave Jarvis to work on in the background, their tasks,
// and their reports. Another user's mission answers 404 like a missing one.
export function createMissionsRouter(deps: MissionsRouterDeps): Router {
  const router = Router();

  // 202: the mission has started; its report is posted to the conversation when it is done.
  router.post('/', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(MissionFields, req.body);
    res.status(202).json(
      await deps.bus.request(orchestratorMissionsCreate, {
        ...body,
        userId: principal.userId,
        createdBy: 'user',
      }),
    );
  });

  // GET /?limit=&status=&before= (newest first; before: the last page's nextBefore)
  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(MissionsListQuery, req.query);
    res.json(
      await deps.bus.request(orchestratorMissionsList, { ...query, userId: principal.userId }),
    );
  });

  router.get('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(MissionIdParams, req.params);
    res.json(await deps.bus.request(orchestratorMissionsGet, { id, userId: principal.userId }));
  });

  router.post('/:id/cancel', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(MissionIdParams, req.params);
    res.json(await deps.bus.request(orchestratorMissionsCancel, { id, userId: principal.userId }));
  });

  return router;
}
