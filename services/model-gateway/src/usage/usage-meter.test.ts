import { randomUUID } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import { MODEL_USAGE_STREAM, modelUsageRecorded, usageEventsOf } from '@jarvis/contracts';
import { freePort, REDIS_URL, waitFor } from '@jarvis/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../redis-client';
import { readDayCounters } from './usage-counters';
import type { UsageLimits } from './usage-env';
import {
  createCapturingLogger,
  silentLogger,
  startUsageFixture,
  type UsageFixture,
  usageEvent,
} from './usage-fixture';
import { createUsageMeter, type UsageMeter } from './usage-meter';
import { nextUtcMidnight, utcDay } from './usage-units';

let fixture: UsageFixture;
const meters: UsageMeter[] = [];
const unreachable: Redis[] = [];

beforeAll(async () => {
  fixture = await startUsageFixture({ label: 'usage-meter', withDatabase: false });
});

afterAll(async () => {
  for (const meter of meters) await meter.stop();
  for (const redis of unreachable) redis.disconnect();
  await fixture?.stop();
});

const NO_LIMITS: UsageLimits = { dailyTokens: 0, dailyCostUsd: 0, requestsPerMinute: 0 };

function meterWith(
  limits: Partial<UsageLimits>,
  options: { rateWindowMs?: number; redis?: Redis } = {},
): UsageMeter {
  const meter = createUsageMeter({
    redis: options.redis ?? fixture.redis,
    bus: fixture.bus,
    limits: { ...NO_LIMITS, ...limits },
    logger: silentLogger,
    ...(options.rateWindowMs ? { rateWindowMs: options.rateWindowMs } : {}),
  });
  meters.push(meter);
  return meter;
}

function today(userId: string) {
  return readDayCounters(fixture.redis, fixture.bus.namespace, userId, utcDay(new Date()), 1_000);
}

async function publishedCount(): Promise<number> {
  const jsm = await fixture.bus.nc.jetstreamManager();
  const info = await jsm.streams.info(fixture.bus.streamName(MODEL_USAGE_STREAM));
  return info.state.messages;
}

// The ids of the events in the stream's newest message.
async function lastPublishedIds(): Promise<string[]> {
  const jsm = await fixture.bus.nc.jetstreamManager();
  const message = await jsm.streams.getMessage(fixture.bus.streamName(MODEL_USAGE_STREAM), {
    last_by_subj: fixture.bus.subject(modelUsageRecorded.subject),
  });
  return usageEventsOf(modelUsageRecorded.payload.parse(message.json())).map((event) => event.id);
}

// A client of a port nothing listens on, that fails each command at once.
async function connectUnreachableRedis(): Promise<Redis> {
  const redis = new Redis(`redis://127.0.0.1:${await freePort()}`, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  unreachable.push(redis);
  return redis;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const RESETS_AT = () => nextUtcMidnight(new Date()).toISOString();

describe('daily caps', () => {
  it('refuses once the token budget is used up, naming the limit, the use and the reset', async () => {
    const meter = meterWith({ dailyTokens: 1_000 });
    const userId = randomUUID();

    await meter.admit(userId, 'chat');
    await meter.record(usageEvent({ userId, inputTokens: 900, outputTokens: 99 }));
    await meter.admit(userId, 'chat');
    await meter.record(usageEvent({ userId, inputTokens: 150, outputTokens: 50 }));
    const refused = await catchBusError(meter.admit(userId, 'chat'));

    expect(refused.toInfo()).toEqual({
      code: 'budget_exceeded',
      message: `daily token budget used up: 1,199 of 1,000 tokens today; it resets at ${RESETS_AT()}`,
    });
    // Embeddings are never refused (memory must still index); another user's day is untouched.
    await meter.admit(userId, 'embed');
    await meter.admit(randomUUID(), 'chat');
  });

  it('refuses once the cost budget is used up', async () => {
    const meter = meterWith({ dailyCostUsd: 1 });
    const userId = randomUUID();

    await meter.record(usageEvent({ userId, costUsd: 0.6 }));
    await meter.admit(userId, 'utility');
    await meter.record(usageEvent({ userId, costUsd: 0.5 }));
    const refused = await catchBusError(meter.admit(userId, 'utility'));

    expect(refused.toInfo()).toEqual({
      code: 'budget_exceeded',
      message: `daily cost budget used up: $1.10 of $1.00 today; it resets at ${RESETS_AT()}`,
    });
  });

  it('counts a call for the UTC day it answered on, not today', async () => {
    const meter = meterWith({ dailyTokens: 100 });
    const userId = randomUUID();
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();

    await meter.record(usageEvent({ userId, inputTokens: 500, at: yesterday }));

    await meter.admit(userId, 'chat');
    expect(await today(userId)).toMatchObject({ inputTokens: 0, requests: 0 });
  });

  it('admits calls of no user and of a user when no limit is set', async () => {
    const capped = meterWith({ dailyTokens: 1, dailyCostUsd: 0.000001, requestsPerMinute: 1 });
    const unlimited = meterWith({});
    const userId = randomUUID();
    await unlimited.record(usageEvent({ userId, inputTokens: 10_000, costUsd: 50 }));

    for (let call = 0; call < 3; call++) {
      await capped.admit(undefined, 'chat');
      await unlimited.admit(userId, 'chat');
    }
  });
});

describe('request rate', () => {
  it('refuses the call past the limit within the window, then admits again as it slides', async () => {
    const meter = meterWith({ requestsPerMinute: 3 }, { rateWindowMs: 1_000 });
    const userId = randomUUID();

    await meter.admit(userId, 'chat');
    await meter.admit(userId, 'chat');
    await sleep(500);
    await meter.admit(userId, 'utility');
    const refused = await catchBusError(meter.admit(userId, 'chat'));
    // Embeddings are not rate limited: indexing sends them in bulk.
    for (let call = 0; call < 5; call++) await meter.admit(userId, 'embed');
    // The first two have left the window; the third is still in it.
    await sleep(650);
    await meter.admit(userId, 'chat');
    await meter.admit(userId, 'chat');
    const stillFull = await catchBusError(meter.admit(userId, 'chat'));

    expect(refused.toInfo()).toEqual({
      code: 'budget_exceeded',
      message:
        'request rate limit reached: 3 of 3 model requests in the last 1 s; try again in 1 s',
    });
    expect(stillFull.code).toBe('budget_exceeded');
  });

  it('never admits more than the limit when replicas admit one user at once', async () => {
    // Two meters on two connections, as two gateway replicas would be.
    const second = new Redis(REDIS_URL);
    try {
      const replicas = [
        meterWith({ requestsPerMinute: 10 }),
        meterWith({ requestsPerMinute: 10 }, { redis: second }),
      ];
      const userId = randomUUID();

      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, call) => replicas[call % 2]?.admit(userId, 'chat')),
      );

      const admitted = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const refused = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [outcome.reason] : [],
      );
      expect(admitted).toHaveLength(10);
      expect(refused).toHaveLength(30);
      for (const reason of refused) {
        expect(reason).toBeInstanceOf(BusError);
        expect(reason).toMatchObject({ code: 'budget_exceeded' });
      }
    } finally {
      second.disconnect();
    }
  });
});

describe('record', () => {
  it('counts tokens, cost and requests once per event id, and publishes the event', async () => {
    const meter = meterWith({});
    const userId = randomUUID();
    const before = await publishedCount();
    const event = usageEvent({ userId, inputTokens: 70, outputTokens: 30, costUsd: 0.0000004 });

    await meter.record(event);
    await meter.record(event);
    await meter.record(usageEvent({ userId, inputTokens: 5, outputTokens: 5, costUsd: 0.25 }));
    await meter.record(usageEvent({ inputTokens: 1_000 }));

    expect(await today(userId)).toEqual({
      inputTokens: 75,
      outputTokens: 35,
      // In nano-dollars: a sub-micro-dollar call still counts.
      costNanos: 250_000_400,
      requests: 2,
      recentRequests: 0,
    });
    // The repeat was published again and JetStream dropped it; the call of no user is published.
    expect(await publishedCount()).toBe(before + 3);
  });

  it('sends calls recorded together at once, ahead of the next admit, even unawaited', async () => {
    // The service's own client, auto-pipelined: the five counts and the admit share a write.
    const redis = createRedis(REDIS_URL);
    await redis.connect();
    try {
      const meter = meterWith({ dailyTokens: 1_000 }, { redis });
      const userId = randomUUID();
      const before = await publishedCount();

      const events = Array.from({ length: 5 }, () =>
        usageEvent({ userId, inputTokens: 200, outputTokens: 50 }),
      );
      const recorded = events.map((event) => meter.record(event));
      const refused = await catchBusError(meter.admit(userId, 'chat'));

      expect(refused.toInfo().message).toMatch(/^daily token budget used up: 1,250 of 1,000/);
      await Promise.all(recorded);
      expect((await today(userId)).requests).toBe(5);
      // One stream message for the five.
      expect(await publishedCount()).toBe(before + 1);
      expect(await lastPublishedIds()).toEqual(events.map((event) => event.id));
    } finally {
      redis.disconnect();
    }
  });

  it('does not fail the caller when Redis fails, and counts the call on a retry', async () => {
    // Not connected yet and queueing nothing: its first command fails, as in a Redis hiccup,
    // and it connects meanwhile.
    const hiccup = new Redis(REDIS_URL, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    try {
      const meter = meterWith({}, { redis: hiccup });
      const userId = randomUUID();
      const before = await publishedCount();

      await meter.record(usageEvent({ userId, inputTokens: 42 }));
      // The event went out at once; only the Redis half waits.
      expect(await publishedCount()).toBe(before + 1);
      expect((await today(userId)).inputTokens).toBe(0);

      await waitFor(async () => (await today(userId)).inputTokens === 42, {
        what: 'the retried count',
        timeoutMs: 5_000,
      });
      expect((await today(userId)).requests).toBe(1);
    } finally {
      hiccup.disconnect();
    }
  });

  it('logs every event still pending at shutdown, at error, with the whole event', async () => {
    const offline = await connectUnreachableRedis();
    const { logger, lines } = createCapturingLogger();
    const meter = createUsageMeter({
      redis: offline,
      bus: fixture.bus,
      limits: NO_LIMITS,
      logger,
    });
    const event = usageEvent({ userId: randomUUID() });

    await meter.record(event);
    await meter.stop();

    expect(lines.filter((line) => line.level === 'error')).toEqual([
      expect.objectContaining({
        msg: 'usage event could not be recorded before shutdown',
        event,
        isCounted: false,
        isPublished: true,
      }),
    ]);
  });

  it('refuses calls with unavailable rather than unmetered when Redis is down', async () => {
    const offline = await connectUnreachableRedis();
    const meter = meterWith({ dailyTokens: 10 }, { redis: offline });

    const refused = await catchBusError(meter.admit(randomUUID(), 'chat'));

    expect(refused.toInfo()).toEqual({
      code: 'unavailable',
      message: 'model-gateway cannot check usage budgets right now',
    });
  });

  it('drops a malformed event with an error log instead of throwing', async () => {
    const { logger, lines } = createCapturingLogger();
    const meter = createUsageMeter({
      redis: fixture.redis,
      bus: fixture.bus,
      limits: NO_LIMITS,
      logger,
    });

    await meter.record(usageEvent({ id: 'not-a-uuid', inputTokens: -1 }));

    expect(lines).toEqual([
      expect.objectContaining({ level: 'error', msg: 'usage event is malformed; not recorded' }),
    ]);
  });
});
