import { defineRedisScript } from '@jarvis/service-kit';
import type { Redis } from 'ioredis';
import { z } from 'zod';

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
