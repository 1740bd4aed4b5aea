import {
  createRateAdmitter,
  HttpError,
  type RateWindow,
  userRateWindows,
} from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import type { Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { principalOf } from './authenticate';

export type RateLimitDeps = {
  redis: Redis;
  // Prefix of the Redis keys (the NATS namespace): installs and test runs sharing one Redis
  // count apart.
  namespace: string;
  logger: Logger;
  // Requests per user per minute on every route; 0: no limit.
  perMinute: number;
  // Chat turns per user per minute, on top of perMinute; 0: no limit.
  chatPerMinute: number;
  // Requests without a valid key per client address per minute; 0: no limit.
  unauthenticatedPerMinute: number;
};

// Counts a request that failed authentication against its address: the error to answer
// instead of the 401 when the address is over its limit.
export type CountUnauthenticated = (req: Request, res: Response) => Promise<HttpError | undefined>;

export type RateLimits = {
  // After authentication: the request's user's limits.
  limitPerUser: RequestHandler;
  countUnauthenticated: CountUnauthenticated;
};

// A chat turn costs model time, so it has a limit of its own.
function isChatTurn(req: Request): boolean {
  return req.method === 'POST' && req.path === '/chat';
}

// Sliding-window limits on /v1, shared by every replica through Redis. An authenticated request
// counts against its user, whichever of the user's keys it carries: a user may hold many keys,
// and the limit is for the user. One user's scripts behind a shared address do not starve the
// others. A request without a valid key has no user, so it counts against its client address
// (req.ip: behind a proxy, only as far as the app's "trust proxy" setting believes the
// X-Forwarded-For header), which bounds what guessing keys or unauthenticated uploads can cost.
export function createRateLimits(deps: RateLimitDeps): RateLimits {
  const admitRate = createRateAdmitter(deps.redis, deps.logger);

  // The error to answer when a window is full; undefined to go on.
  async function admit(
    res: Response,
    windows: RateWindow[],
    whose: string,
  ): Promise<HttpError | undefined> {
    const verdict = await admitRate(windows);
    if (!verdict) return undefined;
    res.setHeader('RateLimit-Limit', verdict.window.limit);
    res.setHeader('RateLimit-Remaining', verdict.remaining);
    res.setHeader('RateLimit-Reset', Math.ceil(verdict.resetMs / 1_000));
    if (verdict.isAdmitted) return undefined;
    const retryAfterS = Math.max(Math.ceil(verdict.resetMs / 1_000), 1);
    res.setHeader('Retry-After', retryAfterS);
    const { limit, what } = verdict.window;
    return new HttpError(
      'rate_limited',
      `rate limit reached: ${limit} ${what} per minute ${whose}; retry in ${retryAfterS} s`,
    );
  }

  return {
    async limitPerUser(req, res, next) {
      const windows = userRateWindows(
        deps.namespace,
        principalOf(req).userId,
        { perMinute: deps.perMinute, chatPerMinute: deps.chatPerMinute },
        isChatTurn(req),
      );
      next(await admit(res, windows, 'for this user'));
    },

    countUnauthenticated(req, res) {
      if (deps.unauthenticatedPerMinute <= 0) return Promise.resolve(undefined);
      const address = req.ip ?? req.socket.remoteAddress ?? 'unknown';
      const window = {
        key: `${deps.namespace}:ratelimit:{address:${address}}:unauthenticated`,
        limit: deps.unauthenticatedPerMinute,
        what: 'requests without a valid API key',
      };
      return admit(res, [window], 'from this address');
    },
  };
}
