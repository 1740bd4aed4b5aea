import { randomUUID } from 'node:crypto';
import { defineRedisScript } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';

// How long a slot outlives its last renewal: a gateway that dies holding slots frees them
// within this time, with no one left to release them.
const LEASE_MS = 60_000;
const RENEW_EVERY_MS = LEASE_MS / 3;

// One sorted set per user, member = slot, score = when its lease ends (Redis's clock, shared by
// every replica). Expired slots are dropped first, so a crashed replica's slots stop counting;
// a slot already held is renewed whatever the count.
const HOLD_SLOT = defineRedisScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and
    redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease)
return 1
`);

type EventStreamSlotsDeps = {
  redis: Redis;
  // Prefix of the Redis keys (the NATS namespace).
  namespace: string;
  logger: Logger;
  // Open streams one user may hold at once, across every gateway replica; 0: no limit.
  perUser: number;
};

type EventStreamSlot = { release(): Promise<void> };

// Counts a user's open /v1/events streams in Redis, so the cap holds across replicas. Answers
// undefined when the user already holds them all.
export async function takeEventStreamSlot(
  deps: EventStreamSlotsDeps,
  userId: string,
): Promise<EventStreamSlot | undefined> {
  const noSlot: EventStreamSlot = { release: async () => {} };
  if (deps.perUser === 0) return noSlot;
  const key = `${deps.namespace}:event-streams:{${userId}}`;
  const slot = randomUUID();
  const hold = () => HOLD_SLOT.run(deps.redis, [key], [slot, deps.perUser, LEASE_MS]);
  // Fail open, as the rate limits do: the cap protects NATS from one user's excess, it does not
  // decide who may listen, and a Redis restart must not cut everyone's events.
  try {
    if (deps.redis.status !== 'ready') throw new Error(`redis is ${deps.redis.status}`);
    if ((await hold()) === 0) return undefined;
  } catch (error) {
    deps.logger.warn({ err: error }, 'event stream cap off: Redis is unreachable');
    return noSlot;
  }
  const renewal = setInterval(() => {
    hold().catch((error: unknown) => {
      deps.logger.warn({ err: error }, 'could not renew an event stream slot');
    });
  }, RENEW_EVERY_MS);
  return {
    async release() {
      clearInterval(renewal);
      await deps.redis.zrem(key, slot).catch((error: unknown) => {
        deps.logger.warn({ err: error }, 'could not release an event stream slot');
      });
    },
  };
}
