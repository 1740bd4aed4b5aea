import type { Bus } from '@jarvis/bus';
import {
  ForgetApplyBody,
  ForgetPreviewBody,
  memoryForgetApply,
  memoryForgetPreview,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type ForgetRouterDeps = { bus: Bus; pool: Pool };

// Forgetting by query, under /v1/memory/forget, after JSON body parsing: first see what matches,
// then forget the items picked. The user is always the key's.
export function createForgetRouter(deps: ForgetRouterDeps): Router {
  const router = Router();

  router.post('/preview', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(ForgetPreviewBody, req.body);
    res.json(await deps.bus.request(memoryForgetPreview, { ...body, userId: principal.userId }));
  });

  router.post('/', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(ForgetApplyBody, req.body);
    res.json(await deps.bus.request(memoryForgetApply, { ...body, userId: principal.userId }));
  });

  return router;
}
