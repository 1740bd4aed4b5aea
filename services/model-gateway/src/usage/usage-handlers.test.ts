import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus, sendRaw } from '@jarvis/bus/testing';
import { modelUsage } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageLimits } from './usage-env';
import { silentLogger, startUsageFixture, type UsageFixture, usageEvent } from './usage-fixture';
import { registerUsageHandlers } from './usage-handlers';
import { createUsageMeter, type UsageMeter } from './usage-meter';
import { applyUsageEvents } from './usage-repository';
import { getUsage } from './usage-service';
import { addDays, nextUtcMidnight, utcDay } from './usage-units';

const LIMITS: UsageLimits = { dailyTokens: 1_000, dailyCostUsd: 2, requestsPerMinute: 5 };
const RATE_WINDOW_MS = 60_000;

let fixture: UsageFixture;
let pool: Pool;
let clientBus: Bus;
let meter: UsageMeter;
let subscriptions: ReturnType<typeof registerUsageHandlers> = [];

beforeAll(async () => {
  fixture = await startUsageFixture({ label: 'usage-handlers', withDatabase: true });
  if (!fixture.db) throw new Error('the fixture has no database');
  pool = fixture.db.pool;
  subscriptions = registerUsageHandlers(fixture.bus, {
    pool,
    redis: fixture.redis,
    limits: LIMITS,
    rateWindowMs: RATE_WINDOW_MS,
  });
  meter = createUsageMeter({
    redis: fixture.redis,
    bus: fixture.bus,
    limits: LIMITS,
    logger: silentLogger,
    rateWindowMs: RATE_WINDOW_MS,
  });
  clientBus = await connectTestBus(fixture.bus.namespace);
  // A request published before the server's SUB reached NATS would find no responders.
  await fixture.bus.nc.flush();
});

afterAll(async () => {
  for (const subscription of subscriptions) subscription.unsubscribe();
  await meter?.stop();
  await clientBus?.close();
  await fixture?.stop();
});

const today = () => utcDay(new Date());

// A call of `daysAgo` days before today, straight into the rollup.
function rollUp(userId: string, daysAgo: number, extra: Parameters<typeof usageEvent>[0] = {}) {
  const at = `${addDays(today(), -daysAgo)}T12:00:00.000Z`;
  return applyUsageEvents(pool, [usageEvent({ userId, at, ...extra })]);
}

describe('model-gateway.usage', () => {
  it("answers one user's days, today's live totals, the limits and what is left", async () => {
    const userId = randomUUID();
    await rollUp(userId, 1, { model: 'gpt-a', inputTokens: 10, outputTokens: 1, costUsd: 0.5 });
    await rollUp(userId, 1, { model: 'gpt-a', inputTokens: 20, outputTokens: 2, costUsd: 0.25 });
    await rollUp(userId, 1, { model: 'gpt-b', purpose: 'utility', inputTokens: 5 });
    await rollUp(userId, 3, { provider: 'ollama', model: 'llama', purpose: 'embed', costUsd: 0 });
    // Another user's usage on the same days and models is not in the answer.
    await rollUp(randomUUID(), 1, { model: 'gpt-a' });
    await meter.admit(userId, 'chat');
    await meter.admit(userId, 'chat');
    await meter.record(usageEvent({ userId, inputTokens: 300, outputTokens: 100, costUsd: 0.5 }));
    await meter.record(usageEvent({ userId, inputTokens: 50, outputTokens: 0, costUsd: 0.25 }));

    const usage = await clientBus.request(modelUsage, {
      userId,
      from: addDays(today(), -6),
      to: addDays(today(), -1),
    });

    const row = { provider: 'openai', outputTokens: 20, costUsd: 0.001, requests: 1 };
    expect(usage).toEqual({
      from: addDays(today(), -6),
      to: addDays(today(), -1),
      days: [
        {
          day: addDays(today(), -1),
          provider: 'openai',
          model: 'gpt-a',
          purpose: 'chat',
          inputTokens: 30,
          outputTokens: 3,
          costUsd: 0.75,
          requests: 2,
        },
        { ...row, day: addDays(today(), -1), model: 'gpt-b', purpose: 'utility', inputTokens: 5 },
        {
          ...row,
          day: addDays(today(), -3),
          provider: 'ollama',
          model: 'llama',
          purpose: 'embed',
          inputTokens: 100,
          costUsd: 0,
        },
      ],
      today: { day: today(), inputTokens: 350, outputTokens: 100, costUsd: 0.75, requests: 2 },
      limits: { dailyTokens: 1_000, dailyCostUsd: 2, requestsPerMinute: 5 },
      remaining: { dailyTokens: 550, dailyCostUsd: 1.25, requestsThisMinute: 3 },
      resetsAt: nextUtcMidnight(new Date()).toISOString(),
    });
  });

  it('covers the last 30 days, today included, when no range is given', async () => {
    const userId = randomUUID();
    for (const daysAgo of [0, 29, 30]) await rollUp(userId, daysAgo, { inputTokens: daysAgo });

    const usage = await clientBus.request(modelUsage, { userId });

    expect(usage.from).toBe(addDays(today(), -29));
    expect(usage.to).toBe(today());
    expect(usage.days.map((day) => day.inputTokens)).toEqual([0, 29]);
  });

  it('clips what is left at zero once a budget is overrun', async () => {
    const userId = randomUUID();
    await meter.record(usageEvent({ userId, inputTokens: 1_500, outputTokens: 0, costUsd: 3 }));

    const { remaining } = await clientBus.request(modelUsage, { userId });

    expect(remaining).toEqual({ dailyTokens: 0, dailyCostUsd: 0, requestsThisMinute: 5 });
  });

  it('answers null limits and remaining when no limit is set', async () => {
    const usage = await getUsage(
      {
        pool,
        redis: fixture.redis,
        namespace: fixture.bus.namespace,
        limits: { dailyTokens: 0, dailyCostUsd: 0, requestsPerMinute: 0 },
        rateWindowMs: RATE_WINDOW_MS,
      },
      { userId: randomUUID() },
    );

    expect(usage.limits).toEqual({
      dailyTokens: null,
      dailyCostUsd: null,
      requestsPerMinute: null,
    });
    expect(usage.remaining).toEqual({
      dailyTokens: null,
      dailyCostUsd: null,
      requestsThisMinute: null,
    });
    expect(usage.days).toEqual([]);
    expect(usage.today).toEqual({
      day: today(),
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      requests: 0,
    });
  });

  it.each([
    ['a userId that is not a uuid', { userId: 'nope' }, /^userId: /],
    ['a missing userId', { userId: undefined }, /^userId: /],
    ['a date that does not exist', { from: '2025-02-30' }, /^from: /],
    ['a timestamp instead of a date', { to: '2025-03-01T00:00:00Z' }, /^to: /],
    ['to before from', { from: '2025-03-02', to: '2025-03-01' }, 'to: must not be before from'],
    [
      'more than 366 days',
      { from: '2024-01-01', to: '2025-01-01' },
      'from: the range may cover at most 366 days',
    ],
  ])('answers bad_request to %s', async (_label, override, message) => {
    const reply = await sendRaw(clientBus, 'model-gateway.usage', {
      userId: randomUUID(),
      ...override,
    });

    expect(reply).toEqual({
      ok: false,
      error: {
        code: 'bad_request',
        message: typeof message === 'string' ? message : expect.stringMatching(message),
      },
    });
  });

  it('accepts exactly 366 days, and checks the range it fills in from a default', async () => {
    const userId = randomUUID();

    const leapYear = await clientBus.request(modelUsage, {
      userId,
      from: '2024-01-01',
      to: '2024-12-31',
    });
    const tooLong = await catchBusError(
      clientBus.request(modelUsage, { userId, from: addDays(today(), -366) }),
    );

    expect(leapYear.days).toEqual([]);
    expect(tooLong.toInfo()).toEqual({
      code: 'bad_request',
      message: 'from: the range may cover at most 366 days',
    });
  });
});
