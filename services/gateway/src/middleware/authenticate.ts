import type { Pool } from '@jarvis/db';
import type { Request, RequestHandler } from 'express';
import type { Principal } from '../repositories/users-repository';
import { authenticate } from '../services/api-keys';

// Keyed by the request object, which express hands unchanged to every router below.
const principals = new WeakMap<Request, Principal>();

// The key's principal, for routes behind authenticateRequests.
export function principalOf(req: Request): Principal {
  const principal = principals.get(req);
  if (!principal) throw new Error(`${req.method} ${req.originalUrl} was not authenticated`);
  return principal;
}

// Once per request, before any body is read: a request without a valid key costs a header and
// a key lookup, never the upload it carries.
export function authenticateRequests(pool: Pool): RequestHandler {
  return async (req, _res, next) => {
    principals.set(req, await authenticate(pool, req.get('authorization')));
    next();
  };
}
