import {
  ApiKeyIdParams,
  CreateApiKeyRequest,
  CreateUserRequest,
  type GatewayHandler,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import {
  createApiKey,
  createUser,
  listApiKeys,
  listUsers,
  revokeAnyUsersApiKey,
  revokeApiKey,
} from '../services/api-keys';
import { parseBody } from './parse-body';

export type KeysHandlersDeps = {
  pool: Pool;
  // Parses the JSON body within the general limit.
  json: RequestHandler;
};

// Users and their API keys, which live in the gateway's own schema: a user's own keys, and
// (for admin keys) every user and key of the install.
export function createKeysHandlers(
  deps: KeysHandlersDeps,
): Record<
  Extract<
    GatewayHandler,
    'listKeys' | 'createKey' | 'revokeKey' | 'listUsers' | 'createUser' | 'revokeAnyKey'
  >,
  RequestHandler[]
> {
  return {
    listKeys: [
      async (req, res) => {
        res.json({ keys: await listApiKeys(deps.pool, principalOf(req)) });
      },
    ],

    createKey: [
      deps.json,
      async (req, res) => {
        // Every field is optional, so a request with no body at all asks for an unnamed key; a
        // body of another type still answers 400.
        const body = parseBody(CreateApiKeyRequest, req.get('content-type') ? req.body : {});
        res.status(201).json(await createApiKey(deps.pool, principalOf(req), body.name));
      },
    ],

    // Revoking the very key of this request is allowed, and it stops working with the next one.
    revokeKey: [
      async (req, res) => {
        const principal = principalOf(req);
        const { id } = parseBody(ApiKeyIdParams, req.params);
        await revokeApiKey(deps.pool, principal, id);
        res.status(204).end();
      },
    ],

    listUsers: [
      async (_req, res) => {
        res.json({ users: await listUsers(deps.pool) });
      },
    ],

    createUser: [
      deps.json,
      async (req, res) => {
        const body = parseBody(CreateUserRequest, req.body);
        res.status(201).json(await createUser(deps.pool, body.name));
      },
    ],

    revokeAnyKey: [
      async (req, res) => {
        const { id } = parseBody(ApiKeyIdParams, req.params);
        await revokeAnyUsersApiKey(deps.pool, id);
        res.status(204).end();
      },
    ],
  };
}
