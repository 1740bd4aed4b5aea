import { HttpError } from '@jarvis/service-kit';
import type { RequestHandler } from 'express';

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
// Authorization must be named: a wildcard never covers it.
const ALLOWED_HEADERS = 'Authorization, Content-Type, Accept, Idempotency-Key, Last-Event-ID';
// What a page on another origin may read of an answer besides the simple headers.
const EXPOSED_HEADERS =
  'x-request-id, x-trace-id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';
const PREFLIGHT_MAX_AGE_S = 600;

// CORS for /v1: pages on the listed origins may call the API; with none listed, only the
// gateway's own web UI can (a browser needs no CORS for its own origin). Keys travel in the
// Authorization header, not cookies, so no credentials are ever allowed.
export function allowCors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    const origin = req.get('origin');
    // The answer depends on Origin: a cache must not hand one origin's answer to another.
    res.vary('Origin');
    const isAllowed = origin !== undefined && allowed.has(origin);
    if (isAllowed) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    }
    const isPreflight = req.method === 'OPTIONS' && req.get('access-control-request-method');
    if (!isPreflight) return next();
    // Refused out loud rather than answered without CORS headers: the browser fails the request
    // either way, but whoever reads the network log learns why.
    if (!isAllowed) {
      return next(
        new HttpError('forbidden', 'this origin may not call the API (see CORS_ORIGINS)'),
      );
    }
    res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS);
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
    res.setHeader('Access-Control-Max-Age', PREFLIGHT_MAX_AGE_S);
    res.status(204).end();
  };
}
