import { ChatResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('an orchestrator crash in the middle of a turn', () => {
  let fixture: StackFixture;

  beforeAll(async () => {
    // A short ack wait so the dead worker's turn is redelivered within seconds.
    fixture = await startStackFixture({ TURN_ACK_WAIT_MS: '1500' });
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('stores and returns exactly one reply', async () => {
    const { apiKey } = await fixture.createUser('dave');
    const hold = fixture.fake.hold();
    const pending = fixture.chat(apiKey, { message: 'plan my week' });

    await hold.reached;
    await fixture.stack.killService('orchestrator');
    hold.release();
    await fixture.stack.startService('orchestrator');

    const response = await pending;
    expect(response.status).toBe(200);
    const body = ChatResponse.parse(await response.json());
    expect(body.reply.content).toBe('fake reply to: plan my week');
    // The first attempt died with the process; the redelivered turn asked the model again.
    expect(fixture.fake.chatRequests().filter(isTurnRequest)).toHaveLength(2);

    const client = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ role: string; content: string }>(
        'SELECT role, content FROM memory.messages WHERE conversation_id = $1 ORDER BY seq',
        [body.conversationId],
      );
      expect(rows).toEqual([
        { role: 'user', content: 'plan my week' },
        { role: 'assistant', content: 'fake reply to: plan my week' },
      ]);
      const runs = await client.query<{ status: string; attempts: number; trace_id: string }>(
        'SELECT status, attempts, trace_id FROM orchestrator.runs WHERE id = $1',
        [body.runId],
      );
      // The run is recorded under the trace of the HTTP request that started it.
      expect(runs.rows).toEqual([
        { status: 'completed', attempts: 2, trace_id: response.headers.get('x-trace-id') },
      ]);
    } finally {
      await client.end();
    }
  });

  it('runs two messages sent at once in one conversation one after the other', async () => {
    const { apiKey, user } = await fixture.createUser('erin');
    const first = ChatResponse.parse(
      await (await fixture.chat(apiKey, { message: 'hello' })).json(),
    );
    // The first turn's episode and extraction ask the utility model after its reply: done (its
    // extraction recorded) before the hold, which must catch the next turn's request, not theirs.
    const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    try {
      await waitFor(
        async () =>
          (await db.query('SELECT 1 FROM memory.extractions WHERE user_id = $1', [user.id])).rows
            .length > 0 || undefined,
        { what: "the first turn's extraction" },
      );
    } finally {
      await db.end();
    }
    fixture.fake.reset();
    const hold = fixture.fake.hold();
    const one = fixture.chat(apiKey, { message: 'first question' });
    await hold.reached;
    const two = fixture.chat(apiKey, {
      message: 'second question',
      conversationId: first.conversationId,
    });

    // The second turn waits for the conversation: the model has seen only the first.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(fixture.fake.chatRequests().filter(isTurnRequest)).toHaveLength(1);
    hold.release();
    const [a, b] = await Promise.all([one, two]);

    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const turns = fixture.fake.chatRequests().filter(isTurnRequest);
    expect(turns).toHaveLength(2);
    // The second prompt holds the first reply: the turns never interleaved.
    expect(JSON.stringify(turns[1]?.body)).toContain('fake reply to: first question');
  });

  it('answers every one of many messages sent at once to one conversation', async () => {
    const { apiKey } = await fixture.createUser('fay');
    // Each answer takes a while, so the last message waits behind seven others: longer than a
    // few redeliveries' worth of the lock's retry pause.
    fixture.fake.onChat(() => ({ delayMs: 400 }));
    const messages = Array.from({ length: 8 }, (_, index) => `message ${index}`);

    const responses = await Promise.all(
      messages.map((message) => fixture.chat(apiKey, { message })),
    );

    expect(responses.map((response) => response.status)).toEqual(messages.map(() => 200));
    const replies = await Promise.all(
      responses.map(async (response) => ChatResponse.parse(await response.json())),
    );
    const client = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ role: string }>(
        'SELECT role FROM memory.messages WHERE conversation_id = $1',
        [replies[0]?.conversationId],
      );
      expect(rows.filter((row) => row.role === 'user')).toHaveLength(8);
      expect(rows.filter((row) => row.role === 'assistant')).toHaveLength(8);
    } finally {
      await client.end();
    }
  });
});
