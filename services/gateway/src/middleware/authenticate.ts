import type { EndpointAuth } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import type { Request, RequestHandler } from 'express';
import type { Principal } from '../repositories/users-repository';
import { authenticate, requireScope } from '../services/api-keys';
import type { CountUnauthenticated, RateLimits } from './rate-limit';

// Keyed by the request object, which express hands unchanged to every router below.
const principals = new WeakMap<Request, Principal>();

// The key's principal, for endpoints that need a key.
export function principalOf(req: Request): Principal {
  const principal = principals.get(req);
  if (!principal) throw new Error(`${req.method} ${req.originalUrl} was not authenticated`);
  return principal;
}

// A body the client is still sending: the request was not complete when it was answered.
function isBodyPending(req: Request): boolean {
  if (req.complete) return false;
  return req.get('transfer-encoding') !== undefined || Number(req.get('content-length')) > 0;
}

// Once per request, before any body is read: a request without a valid key costs a header and
// a key lookup, never the upload it carries. Each refusal counts against the client's address,
// so guessing keys or sending uploads without one is limited too.
function authenticateRequests(
  pool: Pool,
  countUnauthenticated: CountUnauthenticated,
): RequestHandler {
  return async (req, res, next) => {
    let principal: Principal;
    try {
      principal = await authenticate(pool, req.get('authorization'));
    } catch (error) {
      if (!(error instanceof HttpError) || error.code !== 'unauthorized') throw error;
      // Closing the connection stops an upload that would otherwise be received in full, only
      // to be thrown away, before the connection could serve the next request.
      if (isBodyPending(req)) res.setHeader('Connection', 'close');
      return next((await countUnauthenticated(req, res)) ?? error);
    }
    principals.set(req, principal);
    next();
  };
}

const requireAdmin: RequestHandler = (req, _res, next) => {
  requireScope(principalOf(req), 'admin');
  next();
};

// What a request must show before its endpoint's handler runs, by the endpoint's declared auth:
// nothing, or a valid key (of scope admin for admin endpoints), counted against its user's rate
// limit before the scope is checked, so refused admin requests count too.
export function createGuards(
  pool: Pool,
  limits: RateLimits,
): (auth: EndpointAuth) => RequestHandler[] {
  const withKey = [authenticateRequests(pool, limits.countUnauthenticated), limits.limitPerUser];
  const guards: Record<EndpointAuth, RequestHandler[]> = {
    none: [],
    user: withKey,
    admin: [...withKey, requireAdmin],
  };
  return (auth) => guards[auth];
}
