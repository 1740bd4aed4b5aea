import { ApiKeyIdParams, CreateUserRequest } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { createUser, listUsers, requireScope, revokeAnyUsersApiKey } from '../services/api-keys';
import { parseBody } from './parse-body';

export type AdminRouterDeps = { pool: Pool };

// /v1/admin: users and keys across the install, for admin keys only. Mounted after the JSON body
// parser.
export function createAdminRouter(deps: AdminRouterDeps): Router {
  const router = Router();

  router.use((req, _res, next) => {
    requireScope(principalOf(req), 'admin');
    next();
  });

  router.get('/users', async (_req, res) => {
    res.json({ users: await listUsers(deps.pool) });
  });

  router.post('/users', async (req, res) => {
    const body = parseBody(CreateUserRequest, req.body);
    res.status(201).json(await createUser(deps.pool, body.name));
  });

  router.delete('/keys/:id', async (req, res) => {
    const { id } = parseBody(ApiKeyIdParams, req.params);
    await revokeAnyUsersApiKey(deps.pool, id);
    res.status(204).end();
  });

  return router;
}
