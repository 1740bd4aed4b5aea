import { ErrorBody, ModelUsageResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DAILY_TOKENS = 5_000;
// What the fake model says each turn's call used: two turns fit the budget, a third does not.
const TURN_USAGE = { inputTokens: 3_000, outputTokens: 10 };

describe('per-user budgets and GET /v1/usage', () => {
  let fixture: StackFixture;

  beforeAll(async () => {
    fixture = await startStackFixture({
      USER_DAILY_TOKEN_LIMIT: String(DAILY_TOKENS),
      USER_DAILY_COST_LIMIT_USD: '0',
      USER_REQUESTS_PER_MINUTE: '100',
    });
    // Background calls (fact extraction, summaries) stay small, so only turns move the budget.
    fixture.fake.onChat((request) =>
      isTurnRequest(request)
        ? { content: 'Noted.', usage: TURN_USAGE }
        : { content: '{"operations": []}', usage: { inputTokens: 10, outputTokens: 1 } },
    );
  });

  afterAll(async () => {
    await fixture?.close();
  });

  const usageOf = async (apiKey: string, query = '') => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/v1/usage${query}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(response.status).toBe(200);
    return ModelUsageResponse.parse(await response.json());
  };

  it("shows the key's own usage per day and model, today's totals, limits and what is left", async () => {
    const alice = await fixture.createUser('alice');
    const bob = await fixture.createUser('bob');

    const reply = await fixture.chat(alice.apiKey, { message: 'hello there' });
    expect(reply.status).toBe(200);

    // The rollup follows the calls over JetStream: wait for the turn's row.
    const usage = await waitFor(
      async () => {
        const current = await usageOf(alice.apiKey);
        const row = current.days.find((day) => day.purpose === 'chat');
        return row && row.inputTokens >= TURN_USAGE.inputTokens ? current : undefined;
      },
      { what: "the turn's usage in the rollup", timeoutMs: 30_000 },
    );
    const today = new Date().toISOString().slice(0, 10);
    expect(usage.days).toContainEqual({
      day: today,
      provider: 'openai',
      model: 'fake-chat',
      purpose: 'chat',
      inputTokens: expect.any(Number),
      outputTokens: expect.any(Number),
      costUsd: expect.any(Number),
      requests: expect.any(Number),
    });
    expect(usage.today.day).toBe(today);
    expect(usage.today.inputTokens).toBeGreaterThanOrEqual(TURN_USAGE.inputTokens);
    expect(usage.limits).toEqual({
      dailyTokens: DAILY_TOKENS,
      dailyCostUsd: null,
      requestsPerMinute: 100,
    });
    expect(usage.remaining.dailyTokens).toBe(
      Math.max(DAILY_TOKENS - usage.today.inputTokens - usage.today.outputTokens, 0),
    );
    expect(usage.remaining.dailyCostUsd).toBeNull();

    // Bob has used nothing: Alice's usage is hers alone.
    const bobs = await usageOf(bob.apiKey);
    expect(bobs.days).toEqual([]);
    expect(bobs.today).toMatchObject({ inputTokens: 0, outputTokens: 0, requests: 0 });

    const badRange = await fetch(`${fixture.stack.gatewayUrl}/v1/usage?from=2025-13-01`, {
      headers: { authorization: `Bearer ${alice.apiKey}` },
    });
    expect(badRange.status).toBe(400);
  });

  it('stops a turn once the daily token budget is used up, saying which and until when', async () => {
    const { apiKey, user } = await fixture.createUser('carol');

    for (let turn = 0; turn < 2; turn++) {
      const response = await fixture.chat(apiKey, { message: `turn ${turn}` });
      expect(response.status).toBe(200);
    }
    const refused = await fixture.chat(apiKey, { message: 'one more' });

    expect(refused.status).toBe(429);
    const { error } = ErrorBody.parse(await refused.json());
    expect(error.code).toBe('budget_exceeded');
    expect(error.message).toMatch(
      /^daily token budget used up: [\d,]+ of 5,000 tokens today; it resets at \d{4}-\d\d-\d\dT00:00:00\.000Z$/,
    );
    const usage = await usageOf(apiKey);
    expect(usage.remaining.dailyTokens).toBe(0);
    // The conversation says so too, in the reply's place.
    const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    const { rows } = await db.query<{ content: string }>(
      `SELECT content FROM memory.messages WHERE user_id = $1 AND role = 'assistant'
       ORDER BY seq DESC LIMIT 1`,
      [user.id],
    );
    await db.end();
    expect(rows[0]?.content).toMatch(/^I can't answer this now: daily token budget used up/);
  });
});
