import { randomBytes } from 'node:crypto';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { defineRedisScript } from './redis-script';

// Sliding-window rate limits in Redis. Each window is a sorted set of the requests admitted in the
// last windowMs, scored by Redis's own clock so replicas' clocks do not matter. One request may
// fall under several windows (every route, and chat on top): it is admitted only if all of them
// have room, and then counted in all of them, in one script, so concurrent requests on any
// number of replicas never admit more than a limit.
// KEYS: the windows' sets. ARGV: window ms, this request's member, then each window's limit.
// Reply: index of the first full window (0: admitted), Redis's time in ms, then per window the
// count (this request included when admitted) and the score of its oldest entry.
const ADMIT = defineRedisScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = tonumber(ARGV[1])
local counts = {}
local refused = 0
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  counts[i] = redis.call('ZCARD', key)
  if refused == 0 and counts[i] >= tonumber(ARGV[i + 2]) then refused = i end
end
if refused == 0 then
  for i, key in ipairs(KEYS) do
    redis.call('ZADD', key, now, ARGV[2])
    redis.call('PEXPIRE', key, window)
    counts[i] = counts[i] + 1
  end
end
local reply = {refused, now}
for i, key in ipairs(KEYS) do
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  reply[#reply + 1] = counts[i]
  reply[#reply + 1] = tonumber(oldest[2] or now)
end
return reply
`);

// what: the thing counted, for messages ("requests", "chat turns").
export type RateWindow = { key: string; limit: number; what: string };

// The window that refused the request, or else the one closest to its limit: what the
// RateLimit-* headers tell.
export type RateVerdict = {
  isAdmitted: boolean;
  window: RateWindow;
  remaining: number;
  // Until the window's oldest request leaves it and a slot frees up.
  resetMs: number;
};

const AdmitReply = z.array(z.number().int()).min(2);

// Takes a slot in every window, or in none. windows: at least one.
export async function admitRequest(
  redis: Redis,
  windows: readonly RateWindow[],
  windowMs: number,
  member: string,
): Promise<RateVerdict> {
  const keys = windows.map((window) => window.key);
  const args = [windowMs, member, ...windows.map((window) => window.limit)];
  const [refused = 0, now = 0, ...perWindow] = AdmitReply.parse(await ADMIT.run(redis, keys, args));
  const states = windows.map((window, index) => {
    const count = perWindow[index * 2] ?? 0;
    const oldest = perWindow[index * 2 + 1] ?? now;
    return {
      window,
      remaining: Math.max(window.limit - count, 0),
      resetMs: Math.max(oldest + windowMs - now, 0),
    };
  });
  const refusedState = states[refused - 1];
  if (refusedState) return { isAdmitted: false, ...refusedState };
  const tightest = states.reduce((closest, state) =>
    state.remaining < closest.remaining ? state : closest,
  );
  return { isAdmitted: true, ...tightest };
}

// The per-minute windows: what RATE_LIMIT_PER_MINUTE and CHAT_RATE_LIMIT_PER_MINUTE count.
export const RATE_WINDOW_MS = 60_000;

// A user's limits per minute; 0: no limit.
export type UserRateLimits = {
  // Requests on every route (POST /v1/chat, and a chat turn from Telegram, among them).
  perMinute: number;
  // Chat turns, on top of perMinute.
  chatPerMinute: number;
};

// The windows a user's request counts in. The keys are the same in every service that starts
// turns (the gateway's POST /v1/chat, the tools service's Telegram chat), so a user has one
// budget of chat turns however they talk. namespace: the NATS namespace, so installs and test
// runs sharing one Redis count apart.
export function userRateWindows(
  namespace: string,
  userId: string,
  limits: UserRateLimits,
  isChatTurn: boolean,
): RateWindow[] {
  const id = `${namespace}:ratelimit:{user:${userId}}`;
  const windows: RateWindow[] = [];
  if (limits.perMinute > 0) {
    windows.push({ key: `${id}:all`, limit: limits.perMinute, what: 'requests' });
  }
  if (limits.chatPerMinute > 0 && isChatTurn) {
    windows.push({ key: `${id}:chat`, limit: limits.chatPerMinute, what: 'chat turns' });
  }
  return windows;
}

// Admits a request into per-minute windows; undefined: not counted, let it through.
export type AdmitRate = (windows: RateWindow[]) => Promise<RateVerdict | undefined>;

// Fail open: the limits protect the service from overuse; they do not decide who may come in
// (authentication, or a linked chat, does). Refusing everyone while Redis restarts would turn a
// Redis blip into an outage, and the readiness check and watchdog already restart the service if
// Redis stays away. Not waiting on a client that is reconnecting keeps requests from queueing
// behind it meanwhile.
export function createRateAdmitter(redis: Redis, logger: Logger): AdmitRate {
  let isFailingOpen = false;
  return async (windows) => {
    if (windows.length === 0) return undefined;
    let verdict: RateVerdict;
    try {
      if (redis.status !== 'ready') throw new Error(`redis is ${redis.status}`);
      verdict = await admitRequest(redis, windows, RATE_WINDOW_MS, randomBytes(8).toString('hex'));
    } catch (error) {
      if (!isFailingOpen) {
        isFailingOpen = true;
        logger.warn({ err: error }, 'rate limits off: Redis is unreachable');
      }
      return undefined;
    }
    if (isFailingOpen) {
      isFailingOpen = false;
      logger.info('rate limits back on');
    }
    return verdict;
  };
}
