import { randomUUID } from 'node:crypto';
import { connectTestRedis, uniqueNamespace, waitFor } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tryLockConversation } from './conversation-lock';

const namespace = uniqueNamespace('orchestrator');
const LEASE_MS = 10_000;
let redis: Redis;

beforeAll(() => {
  redis = connectTestRedis();
});

// Every test releases its locks; a key left by a failed test expires with its lease.
afterAll(async () => {
  await redis.quit();
});

// Where the lock lives: the TTL and holder checks below read it directly.
function lockKey(conversationId: string): string {
  return `${namespace}:lock:conversation:${conversationId}`;
}

describe('tryLockConversation', () => {
  it('refuses a second holder while the lock is held', async () => {
    const conversationId = randomUUID();
    const first = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);

    const second = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);

    expect(first).toBeDefined();
    expect(second).toBeUndefined();
    await first?.release();
  });

  it('sets the lease as the key TTL', async () => {
    const conversationId = randomUUID();
    const lock = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);

    const ttl = await redis.pttl(lockKey(conversationId));

    expect(ttl).toBeGreaterThan(LEASE_MS - 2_000);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);
    await lock?.release();
  });

  it('locks each conversation on its own', async () => {
    const first = await tryLockConversation(redis, namespace, randomUUID(), LEASE_MS);
    const other = await tryLockConversation(redis, namespace, randomUUID(), LEASE_MS);

    expect(first).toBeDefined();
    expect(other).toBeDefined();
    await first?.release();
    await other?.release();
  });

  it('lets another holder in once released', async () => {
    const conversationId = randomUUID();
    const first = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);
    await first?.release();

    expect(await redis.exists(lockKey(conversationId))).toBe(0);
    const next = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);
    expect(next).toBeDefined();
    await next?.release();
  });

  it("does not let a holder whose lease ran out release or renew its successor's lock", async () => {
    const conversationId = randomUUID();
    const key = lockKey(conversationId);
    const stale = await tryLockConversation(redis, namespace, conversationId, 200);
    expect(stale).toBeDefined();
    // The holder stalls past its lease; Redis expires the key on its own.
    await waitFor(async () => (await redis.exists(key)) === 0 || undefined, {
      intervalMs: 20,
      what: 'the lease to expire',
    });
    const successor = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);
    expect(successor).toBeDefined();
    const successorToken = await redis.get(key);

    expect(await stale?.renew()).toBe(false);
    await stale?.release();

    expect(await redis.get(key)).toBe(successorToken);
    expect(await redis.pttl(key)).toBeGreaterThan(LEASE_MS - 2_000);
    expect(await tryLockConversation(redis, namespace, conversationId, LEASE_MS)).toBeUndefined();
    await successor?.release();
    expect(await redis.exists(key)).toBe(0);
  });

  it('extends the lease on renew', async () => {
    const conversationId = randomUUID();
    const key = lockKey(conversationId);
    const lock = await tryLockConversation(redis, namespace, conversationId, LEASE_MS);
    // Stand in for time passing: most of the lease is used up.
    await redis.pexpire(key, 500);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(500);

    expect(await lock?.renew()).toBe(true);

    expect(await redis.pttl(key)).toBeGreaterThan(LEASE_MS - 2_000);
    await lock?.release();
  });
});
