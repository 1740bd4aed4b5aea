import { ApiKeyIdParams, CreateApiKeyRequest } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { createApiKey, listApiKeys, revokeApiKey } from '../services/api-keys';
import { parseBody } from './parse-body';

export type KeysRouterDeps = { pool: Pool };

// /v1/keys: the key's own user's API keys. Mounted after the JSON body parser.
export function createKeysRouter(deps: KeysRouterDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    res.json({ keys: await listApiKeys(deps.pool, principal) });
  });

  router.post('/', async (req, res) => {
    const principal = principalOf(req);
    // Every field is optional, so a request with no body at all asks for an unnamed key; a body
    // of another type still answers 400.
    const body = parseBody(CreateApiKeyRequest, req.get('content-type') ? req.body : {});
    res.status(201).json(await createApiKey(deps.pool, principal, body.name));
  });

  // Revoking the very key of this request is allowed, and it stops working with the next one.
  router.delete('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(ApiKeyIdParams, req.params);
    await revokeApiKey(deps.pool, principal, id);
    res.status(204).end();
  });

  return router;
}
