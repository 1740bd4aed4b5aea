import { randomUUID } from 'node:crypto';
import { connectTestRedis, uniqueNamespace } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitRequest, type RateWindow } from './rate-limiter';

let redis: Redis;

beforeAll(() => {
  redis = connectTestRedis();
});

afterAll(() => {
  redis?.disconnect();
});

function window(limit: number, what = 'requests'): RateWindow {
  return { key: `${uniqueNamespace('rate')}:window`, limit, what };
}

const admit = (windows: RateWindow[], windowMs = 60_000) =>
  admitRequest(redis, windows, windowMs, randomUUID());

describe('admitRequest', () => {
  it('admits exactly the limit out of a concurrent burst', async () => {
    const all = window(25);

    const verdicts = await Promise.all(Array.from({ length: 80 }, () => admit([all])));

    expect(verdicts.filter((verdict) => verdict.isAdmitted)).toHaveLength(25);
    expect(await redis.zcard(all.key)).toBe(25);
  });

  it('counts down what remains and says when a slot frees up', async () => {
    const all = window(3);

    const first = await admit([all]);
    const second = await admit([all]);
    await admit([all]);
    const refused = await admit([all]);

    expect(first).toMatchObject({ isAdmitted: true, window: all, remaining: 2 });
    expect(second).toMatchObject({ isAdmitted: true, remaining: 1 });
    expect(refused).toMatchObject({ isAdmitted: false, window: all, remaining: 0 });
    expect(refused.resetMs).toBeGreaterThan(55_000);
    expect(refused.resetMs).toBeLessThanOrEqual(60_000);
  });

  it('admits again as the oldest requests slide out of the window', async () => {
    const all = window(2);
    await admit([all], 400);
    await admit([all], 400);
    expect((await admit([all], 400)).isAdmitted).toBe(false);

    await new Promise((resolve) => setTimeout(resolve, 450));

    expect((await admit([all], 400)).isAdmitted).toBe(true);
  });

  it('takes a slot in every window or in none', async () => {
    const all = window(10);
    const chat = window(2, 'chat turns');
    await admit([all, chat]);
    await admit([all, chat]);

    const refused = await admit([all, chat]);

    expect(refused).toMatchObject({ isAdmitted: false, window: chat, remaining: 0 });
    expect(await redis.zcard(all.key)).toBe(2);
    expect(await admit([all])).toMatchObject({ isAdmitted: true, window: all, remaining: 7 });
  });

  it('reports the window closest to its limit', async () => {
    const all = window(10);
    const chat = window(4, 'chat turns');

    expect(await admit([all, chat])).toMatchObject({ window: chat, remaining: 3 });
  });
});
