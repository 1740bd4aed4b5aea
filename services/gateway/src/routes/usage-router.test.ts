import { randomUUID } from 'node:crypto';
import { publishWork } from '@jarvis/bus';
import { type ModelUsageEvent, ModelUsageResponse, modelUsageRecorded } from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/usage', {
    services: ['model-gateway'],
    serviceEnv: {
      USER_DAILY_TOKEN_LIMIT: '10000',
      USER_DAILY_COST_LIMIT_USD: '0',
      USER_REQUESTS_PER_MINUTE: '60',
    },
  });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

function usageEvent(userId: string, day: string, inputTokens: number): ModelUsageEvent {
  return {
    id: randomUUID(),
    userId,
    provider: 'openai',
    model: 'gpt-test',
    purpose: 'chat',
    inputTokens,
    outputTokens: 1,
    costUsd: 0.002,
    at: `${day}T10:00:00.000Z`,
  };
}

describe('GET /v1/usage', () => {
  it('answers 401 without a key', async () => {
    const reply = await call('GET', '/');

    expect(reply.status).toBe(401);
  });

  it("answers the key's own user's usage in the range, with limits and what is left", async () => {
    // As the model gateway's meter sends them: one stream message, which its rollup applies in
    // one statement, so once alice's April is counted all of them are.
    const events = [
      usageEvent(alice.id, '2025-03-01', 40),
      usageEvent(alice.id, '2025-03-01', 2),
      usageEvent(alice.id, '2025-04-01', 7),
      usageEvent(bob.id, '2025-03-01', 1_000),
    ];
    await publishWork(harness.bus, modelUsageRecorded, { events }, randomUUID());
    await waitFor(
      async () => {
        const april = await call('GET', '/?from=2025-04-01&to=2025-04-01', { key: alice.key });
        return ModelUsageResponse.parse(april.body).days.length > 0 || undefined;
      },
      { what: 'the usage events to be rolled up' },
    );

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
