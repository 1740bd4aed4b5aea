import { randomUUID } from 'node:crypto';
import { defineRedisScript } from '@jarvis/service-kit';
import type { Redis } from 'ioredis';

// Deletes the lock only if this holder still owns it, so a holder whose lease ran out cannot
// release the lock a successor took since.
const RELEASE = defineRedisScript(
  `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`,
);
const RENEW = defineRedisScript(
  `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`,
);

export type ConversationLock = {
  // Extends the lease; false when the lease was lost.
  renew(): Promise<boolean>;
  release(): Promise<void>;
};

// One turn at a time per conversation, across all orchestrator replicas. The lease expires on
// its own when the holder dies, so a crashed worker never blocks its conversation for long.
export async function tryLockConversation(
  redis: Redis,
  namespace: string,
  conversationId: string,
  leaseMs: number,
): Promise<ConversationLock | undefined> {
  const key = `${namespace}:lock:conversation:${conversationId}`;
  const token = randomUUID();
  const acquired = await redis.set(key, token, 'PX', leaseMs, 'NX');
  if (acquired !== 'OK') return undefined;
  return {
    async renew() {
      return (await RENEW.run(redis, [key], [token, leaseMs])) === 1;
    },
    async release() {
      await RELEASE.run(redis, [key], [token]);
    },
  };
}
