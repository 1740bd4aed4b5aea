import { randomUUID } from 'node:crypto';
import { ModelUsageResponse } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { connectTestRedis } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerUsageHandlers } from '../../../model-gateway/src/usage/usage-handlers';
import { applyUsageEvents } from '../../../model-gateway/src/usage/usage-repository';
import {
  badRequest,
  type RouterHarness,
  startRouterHarness,
  type TestUser,
} from './router-test-harness';

let harness: RouterHarness;
let redis: ReturnType<typeof connectTestRedis>;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  redis = connectTestRedis();
  harness = await startRouterHarness('/v1/usage', (bus, pool) =>
    registerUsageHandlers(bus, {
      pool,
      redis,
      limits: { dailyTokens: 10_000, dailyCostUsd: 0, requestsPerMinute: 60 },
    }),
  );
  await migrate(harness.db.pool, {
    schema: 'model_gateway',
    directory: new URL('../../../model-gateway/migrations', import.meta.url),
  });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
  redis?.disconnect();
});

const call: RouterHarness['call'] = (method, route, options) =>
  harness.call(method, route, options);

function rollUp(userId: string, day: string, inputTokens: number) {
  return applyUsageEvents(harness.db.pool, [
    {
      id: randomUUID(),
      userId,
      provider: 'openai',
      model: 'gpt-test',
      purpose: 'chat',
      inputTokens,
      outputTokens: 1,
      costUsd: 0.002,
      at: `${day}T10:00:00.000Z`,
    },
  ]);
}

describe('GET /v1/usage', () => {
  it('answers 401 without a key', async () => {
    const reply = await call('GET', '/');

    expect(reply.status).toBe(401);
  });

  it("answers the key's own user's usage in the range, with limits and what is left", async () => {
    await rollUp(alice.id, '2025-03-01', 40);
    await rollUp(alice.id, '2025-03-01', 2);
    await rollUp(alice.id, '2025-04-01', 7);
    await rollUp(bob.id, '2025-03-01', 1_000);

    const reply = await call('GET', '/?from=2025-03-01&to=2025-03-31', { key: alice.key });

    expect(reply.status).toBe(200);
    const usage = ModelUsageResponse.parse(reply.body);
    expect(usage).toMatchObject({
      from: '2025-03-01',
      to: '2025-03-31',
      days: [
        {
          day: '2025-03-01',
          provider: 'openai',
          model: 'gpt-test',
          purpose: 'chat',
          inputTokens: 42,
          outputTokens: 2,
          costUsd: 0.004,
          requests: 2,
        },
      ],
      limits: { dailyTokens: 10_000, dailyCostUsd: null, requestsPerMinute: 60 },
      remaining: { dailyTokens: 10_000, dailyCostUsd: null, requestsThisMinute: 60 },
    });
  });

  it('defaults to the last 30 days', async () => {
    const reply = await call('GET', '/', { key: bob.key });

    expect(reply.status).toBe(200);
    const usage = ModelUsageResponse.parse(reply.body);
    expect(usage.to).toBe(new Date().toISOString().slice(0, 10));
    expect(usage.days).toEqual([]);
  });

  it.each([
    ['a date that does not exist', '?from=2025-02-30', /^from: /],
    ['a date in another format', '?to=01/03/2025', /^to: /],
    ['to before from', '?from=2025-03-02&to=2025-03-01', 'to: must not be before from'],
    [
      'over 366 days',
      '?from=2024-01-01&to=2025-01-01',
      'from: the range may cover at most 366 days',
    ],
    ['a repeated parameter', '?from=2025-03-01&from=2025-03-02', /^from: /],
    [
      'year 0000, which Postgres refuses',
      '?from=0000-01-01&to=0000-01-31',
      /^from: year must be 0001-9999/,
    ],
    // The user is always the key's: naming another one is refused, not ignored.
    ['a userId', `?userId=${randomUUID()}`, /^\(root\): /],
  ])('answers 400 to %s', async (_label, query, message) => {
    expect(await call('GET', `/${query}`, { key: alice.key })).toEqual(badRequest(message));
  });
});
