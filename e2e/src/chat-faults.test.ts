import { ChatResponse } from '@jarvis/contracts';
import {
  type RedisServer,
  type StackFixture,
  startRedisServer,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('chat through an orchestrator crash mid-submit and a Redis outage', () => {
  let redis: RedisServer;
  let fixture: StackFixture;
  let db: pg.Client;

  beforeAll(async () => {
    // A Redis of this test's own, to stop: the machine's is shared with every other test.
    redis = await startRedisServer();
    fixture = await startStackFixture({
      REDIS_URL: redis.url,
      // A submit that died is finished within a second or two, not the default 15 s.
      TURN_SUBMIT_SWEEP_MS: '300',
      TURN_SUBMIT_STALE_MS: '1000',
      // The services outlive the outage instead of exiting to be restarted.
      DEPENDENCY_LOSS_EXIT_MS: '120000',
    });
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
    await redis?.stop();
  });

  const post = (apiKey: string, body: unknown, idempotencyKey: string) =>
    fetch(`${fixture.stack.gatewayUrl}/v1/chat`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      },
      body: JSON.stringify(body),
    });

  async function messagesOf(userId: string): Promise<{ role: string; content: string }[]> {
    const { rows } = await db.query<{ role: string; content: string }>(
      'SELECT role, content FROM memory.messages WHERE user_id = $1 ORDER BY seq',
      [userId],
    );
    return rows;
  }

  it('answers a message stored before the orchestrator died once, after it restarts', async () => {
    const { apiKey, user } = await fixture.createUser('crashing');
    const userId = user.id;
    await fixture.stack.stopService('orchestrator');
    await fixture.stack.startService('orchestrator', { FAULT_EXIT_AFTER: 'message_stored' });

    const refused = await post(apiKey, { message: 'water the plants' }, 'plants-1');

    // The orchestrator died with the message stored and no run: the client cannot know.
    expect(refused.status).toBeGreaterThanOrEqual(500);
    expect(await fixture.stack.process('orchestrator')?.exited).toBe(1);
    expect(await messagesOf(userId)).toEqual([{ role: 'user', content: 'water the plants' }]);

    await fixture.stack.startService('orchestrator');

    // Nobody asks again: the sweep queues the turn, and the message gets its reply.
    const replied = await waitFor(
      async () => {
        const messages = await messagesOf(userId);
        return messages.length === 2 ? messages : undefined;
      },
      { timeoutMs: 30_000, what: 'the reply to the stranded message' },
    );
    expect(replied).toEqual([
      { role: 'user', content: 'water the plants' },
      { role: 'assistant', content: 'fake reply to: water the plants' },
    ]);
    // The client's retry with its key gets that reply, and stores nothing twice.
    const retried = await post(apiKey, { message: 'water the plants' }, 'plants-1');
    expect(retried.status).toBe(200);
    expect(ChatResponse.parse(await retried.json()).reply.content).toBe(
      'fake reply to: water the plants',
    );
    expect(await messagesOf(userId)).toHaveLength(2);
  });

  it('answers 503 at once while Redis is down, storing nothing, and chats again once it is back', async () => {
    const { apiKey, user } = await fixture.createUser('outage');
    const userId = user.id;
    await redis.stop();
    try {
      const startedAt = Date.now();
      const response = await post(apiKey, { message: 'are you there?' }, 'outage-1');

      expect(Date.now() - startedAt).toBeLessThan(2_000);
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({
        error: {
          code: 'unavailable',
          message: 'the short-lived state store (Redis) is unavailable',
        },
      });
      expect(await messagesOf(userId)).toEqual([]);
    } finally {
      await redis.start();
    }
    const answered = await waitFor(
      async () => {
        const response = await post(apiKey, { message: 'are you there?' }, 'outage-1');
        return response.status === 200 ? ChatResponse.parse(await response.json()) : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'a chat once Redis is back' },
    );
    expect(answered.reply.content).toBe('fake reply to: are you there?');
  });
});
