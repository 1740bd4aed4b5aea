import { defineRedisScript } from '@jarvis/service-kit';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { addDays, startOfUtcDay, toNanos, utcDay } from './usage-units';

// All the Redis state of the budgets: per user and UTC day a hash of counters, per user a sorted
// set of the chat calls started in the rate window, and per recorded event a marker that makes
// counting it idempotent. The {userId} hash tag keeps one user's keys in one cluster slot, which
// the scripts need: each touches several keys at once.

// The request-rate window: USER_REQUESTS_PER_MINUTE counts the calls started in the last one.
export const RATE_WINDOW_MS = 60_000;
// How long a recorded event's marker stays: far longer than any retry of one record() lasts.
const EVENT_MARKER_TTL_S = 24 * 60 * 60;

function dayKey(namespace: string, userId: string, day: string): string {
  return `${namespace}:usage:{${userId}}:day:${day}`;
}
function rateKey(namespace: string, userId: string): string {
  return `${namespace}:usage:{${userId}}:rate`;
}
function eventKey(namespace: string, userId: string, eventId: string): string {
  return `${namespace}:usage:{${userId}}:event:${eventId}`;
}

// Checks the daily counters, then takes a slot in the sliding rate window, in one step: replicas
// admitting the same user at once can never take more slots than the limit. The window is an
// exact log of start times on Redis's own clock, so replicas' clocks do not matter.
// KEYS: day hash, rate set. ARGV: token limit, cost limit (nanos), rate limit, window ms, member.
// 0 turns a limit off. Reply: {'ok'} | {'tokens', used} | {'cost', usedNanos} |
// {'rate', count, msUntilASlotFrees}.
const ADMIT = defineRedisScript(`
local used = redis.call('HMGET', KEYS[1], 'input_tokens', 'output_tokens', 'cost_nanos')
local tokens = (tonumber(used[1]) or 0) + (tonumber(used[2]) or 0)
local cost = tonumber(used[3]) or 0
local tokenLimit = tonumber(ARGV[1])
local costLimit = tonumber(ARGV[2])
local rateLimit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
if tokenLimit > 0 and tokens >= tokenLimit then return {'tokens', tokens} end
if costLimit > 0 and cost >= costLimit then return {'cost', cost} end
if rateLimit > 0 then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local count = redis.call('ZCARD', KEYS[2])
  if count >= rateLimit then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {'rate', count, tonumber(oldest[2]) + window - now}
  end
  redis.call('ZADD', KEYS[2], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[2], window)
end
return {'ok'}
`);

// Adds one call to the user's day, once per event id however often it is retried.
// KEYS: event marker, day hash. ARGV: input, output, cost nanos, day expiry (unix s), marker ttl.
const COUNT = defineRedisScript(`
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[5]) then return 0 end
redis.call('HINCRBY', KEYS[2], 'input_tokens', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'output_tokens', ARGV[2])
redis.call('HINCRBY', KEYS[2], 'cost_nanos', ARGV[3])
redis.call('HINCRBY', KEYS[2], 'requests', 1)
redis.call('EXPIREAT', KEYS[2], ARGV[4])
return 1
`);

// Today's counters and the calls started in the rate window, read together.
// KEYS: day hash, rate set. ARGV: window ms.
const READ = defineRedisScript(`
local used = redis.call('HMGET', KEYS[1], 'input_tokens', 'output_tokens', 'cost_nanos', 'requests')
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local recent = redis.call('ZCOUNT', KEYS[2], '(' .. (now - tonumber(ARGV[1])), '+inf')
return {used[1] or '0', used[2] or '0', used[3] or '0', used[4] or '0', recent}
`);

export type AdmitLimits = {
  dailyTokens: number;
  dailyCostNanos: number;
  // 0 for calls the rate does not apply to.
  requestsPerWindow: number;
  windowMs: number;
};

export type AdmitVerdict =
  | { type: 'ok' }
  | { type: 'tokens'; used: number }
  | { type: 'cost'; usedNanos: number }
  | { type: 'rate'; count: number; retryAfterMs: number };

const AdmitReply = z.union([
  z.tuple([z.literal('ok')]),
  z.tuple([z.literal('tokens'), z.number()]),
  z.tuple([z.literal('cost'), z.number()]),
  z.tuple([z.literal('rate'), z.number(), z.number()]),
]);

export async function admitRequest(
  redis: Redis,
  namespace: string,
  userId: string,
  day: string,
  limits: AdmitLimits,
  member: string,
): Promise<AdmitVerdict> {
  const reply = AdmitReply.parse(
    await ADMIT.run(
      redis,
      [dayKey(namespace, userId, day), rateKey(namespace, userId)],
      [
        limits.dailyTokens,
        limits.dailyCostNanos,
        limits.requestsPerWindow,
        limits.windowMs,
        member,
      ],
    ),
  );
  switch (reply[0]) {
    case 'ok':
      return { type: 'ok' };
    case 'tokens':
      return { type: 'tokens', used: reply[1] };
    case 'cost':
      return { type: 'cost', usedNanos: reply[1] };
    case 'rate':
      return { type: 'rate', count: reply[1], retryAfterMs: Math.max(reply[2], 0) };
  }
}

export type CountedCall = {
  id: string;
  userId: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  at: string;
};

// False when the event was counted before (a retry whose first try did land).
export async function countUsage(
  redis: Redis,
  namespace: string,
  call: CountedCall,
  now: Date,
): Promise<boolean> {
  const day = utcDay(new Date(call.at));
  // A day's counters live through the next day, so a call that answers just after midnight can
  // still be added to the day it started on; later than that the budgets no longer look.
  const expiresAtMs = startOfUtcDay(addDays(day, 2)).getTime();
  if (expiresAtMs <= now.getTime()) return false;
  const counted = await COUNT.run(
    redis,
    [eventKey(namespace, call.userId, call.id), dayKey(namespace, call.userId, day)],
    [
      call.inputTokens,
      call.outputTokens,
      toNanos(call.costUsd),
      Math.floor(expiresAtMs / 1_000),
      EVENT_MARKER_TTL_S,
    ],
  );
  return counted === 1;
}

export type DayCounters = {
  inputTokens: number;
  outputTokens: number;
  costNanos: number;
  requests: number;
  // Calls started in the rate window ending now.
  recentRequests: number;
};

const ReadReply = z.tuple([
  z.coerce.number(),
  z.coerce.number(),
  z.coerce.number(),
  z.coerce.number(),
  z.number(),
]);

export async function readDayCounters(
  redis: Redis,
  namespace: string,
  userId: string,
  day: string,
  windowMs: number,
): Promise<DayCounters> {
  const [inputTokens, outputTokens, costNanos, requests, recentRequests] = ReadReply.parse(
    await READ.run(redis, [dayKey(namespace, userId, day), rateKey(namespace, userId)], [windowMs]),
  );
  return { inputTokens, outputTokens, costNanos, requests, recentRequests };
}
