import { randomBytes } from 'node:crypto';
import { HttpError } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import type { Request, RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { bearerKey, hashApiKey } from '../services/api-keys';
import { admitRequest, type RateVerdict, type RateWindow } from '../services/rate-limiter';

const WINDOW_MS = 60_000;

export type RateLimitDeps = {
  redis: Redis;
  // Prefix of the Redis keys (the NATS namespace): installs and test runs sharing one Redis
  // count apart.
  namespace: string;
  logger: Logger;
  // Requests per key per minute on every route; 0: no limit.
  perMinute: number;
  // Chat turns per key per minute, on top of perMinute; 0: no limit.
  chatPerMinute: number;
};

// A chat turn costs model time, so it has a limit of its own.
function isChatTurn(req: Request): boolean {
  return req.method === 'POST' && req.path === '/chat';
}

// Per-key sliding-window limits on /v1, before any route runs. Counted per key rather than per
// address: one user's scripts behind a shared address must not starve the others, and the key is
// who the limit is for. The key is identified by its hash, without a database lookup; a request
// with no key is not counted (it gets no further than its route's 401).
export function limitRequests(deps: RateLimitDeps): RequestHandler {
  let isFailingOpen = false;
  return async (req, res, next) => {
    const key = bearerKey(req.get('authorization'));
    if (!key) return next();
    const id = `${deps.namespace}:ratelimit:{${hashApiKey(key)}}`;
    const windows: RateWindow[] = [];
    if (deps.perMinute > 0) {
      windows.push({ key: `${id}:all`, limit: deps.perMinute, what: 'requests' });
    }
    if (deps.chatPerMinute > 0 && isChatTurn(req)) {
      windows.push({ key: `${id}:chat`, limit: deps.chatPerMinute, what: 'chat turns' });
    }
    if (windows.length === 0) return next();

    // Fail open: the limits protect the service from overuse; they do not decide who may come
    // in (authentication does). Refusing everyone while Redis restarts would turn a Redis blip
    // into an outage of the whole API, and the readiness check and watchdog already restart the
    // gateway if Redis stays away. Not waiting on a client that is reconnecting keeps requests
    // from queueing behind it meanwhile.
    let verdict: RateVerdict;
    try {
      if (deps.redis.status !== 'ready') throw new Error(`redis is ${deps.redis.status}`);
      verdict = await admitRequest(deps.redis, windows, WINDOW_MS, randomBytes(8).toString('hex'));
    } catch (error) {
      if (!isFailingOpen) {
        isFailingOpen = true;
        deps.logger.warn({ err: error }, 'rate limits off: Redis is unreachable');
      }
      return next();
    }
    if (isFailingOpen) {
      isFailingOpen = false;
      deps.logger.info('rate limits back on');
    }

    res.setHeader('RateLimit-Limit', verdict.window.limit);
    res.setHeader('RateLimit-Remaining', verdict.remaining);
    res.setHeader('RateLimit-Reset', Math.ceil(verdict.resetMs / 1_000));
    if (verdict.isAdmitted) return next();
    const retryAfterS = Math.max(Math.ceil(verdict.resetMs / 1_000), 1);
    res.setHeader('Retry-After', retryAfterS);
    const { limit, what } = verdict.window;
    next(
      new HttpError(
        'rate_limited',
        `rate limit reached: ${limit} ${what} per minute for this API key; retry in ${retryAfterS} s`,
      ),
    );
  };
}
