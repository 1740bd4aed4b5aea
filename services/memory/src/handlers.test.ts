import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  MESSAGE_MAX_CHARS,
  type MemoryAppendRequest,
  memoryAppend,
  memoryRecall,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { loadTokenCounter } from '@jarvis/tokens';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { readTurn } from './services/extract-facts';
import { indexUserMessagesNow } from './services/index-messages';
import { writeEpisode } from './services/write-episode';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;
let countRows: MemoryFixture['countRows'];

beforeAll(async () => {
  memory = await startMemoryFixture('memory');
  ({ db, clientBus, countRows } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

function append(userId: string, content: string, conversationId?: string) {
  return clientBus.request(memoryAppend, {
    userId,
    role: 'user',
    content,
    ...(conversationId ? { conversationId } : {}),
  });
}

describe('memory.messages.append', () => {
  it("creates the user's default conversation on the first append and reuses it", async () => {
    const userId = randomUUID();

    const first = await append(userId, 'hello');
    const second = await append(userId, 'again');

    expect(first.isDuplicate).toBe(false);
    expect(first.message).toMatchObject({ role: 'user', content: 'hello' });
    expect(second.message.conversationId).toBe(first.message.conversationId);
    expect(second.message.id).not.toBe(first.message.id);
    const { rows } = await db.pool.query<{ id: string; is_default: boolean }>(
      'SELECT id, is_default FROM memory.conversations WHERE user_id = $1',
      [userId],
    );
    expect(rows).toEqual([{ id: first.message.conversationId, is_default: true }]);
  });

  it('puts concurrent first appends of a new user into one conversation', async () => {
    const userId = randomUUID();

    const replies = await Promise.all(
      Array.from({ length: 5 }, (_, index) => append(userId, `racing ${index}`)),
    );

    const conversationIds = new Set(replies.map((reply) => reply.message.conversationId));
    expect(conversationIds.size).toBe(1);
    expect(
      await countRows('SELECT count(*) FROM memory.conversations WHERE user_id = $1', [userId]),
    ).toBe(1);
    expect(
      await countRows('SELECT count(*) FROM memory.messages WHERE user_id = $1', [userId]),
    ).toBe(5);
  });

  it('appends to a conversation named by id', async () => {
    const userId = randomUUID();
    const { message: first } = await append(userId, 'start');

    const { message } = await append(userId, 'named', first.conversationId);

    expect(message.conversationId).toBe(first.conversationId);
    expect(message.content).toBe('named');
  });

  it('stores a retried append with the same idempotency key once', async () => {
    const userId = randomUUID();
    const request: MemoryAppendRequest = {
      userId,
      role: 'user',
      content: 'only once',
      idempotencyKey: `turn:${randomUUID()}:user`,
    };

    const first = await clientBus.request(memoryAppend, request);
    const retry = await clientBus.request(memoryAppend, request);

    expect(first.isDuplicate).toBe(false);
    expect(retry.isDuplicate).toBe(true);
    expect(retry.message).toEqual(first.message);
    expect(
      await countRows(
        'SELECT count(*) FROM memory.messages WHERE user_id = $1 AND idempotency_key = $2',
        [userId, request.idempotencyKey],
      ),
    ).toBe(1);
  });

  it("answers not_found for another user's conversation and stores nothing there", async () => {
    const owner = randomUUID();
    const intruder = randomUUID();
    const { message } = await append(owner, 'private');

    const error = await catchBusError(append(intruder, 'let me in', message.conversationId));

    expect(error.code).toBe('not_found');
    expect(
      await countRows('SELECT count(*) FROM memory.messages WHERE conversation_id = $1', [
        message.conversationId,
      ]),
    ).toBe(1);
    expect(
      await countRows('SELECT count(*) FROM memory.messages WHERE user_id = $1', [intruder]),
    ).toBe(0);
  });

  it('answers not_found for a conversation id that does not exist', async () => {
    const error = await catchBusError(append(randomUUID(), 'hello', randomUUID()));

    expect(error.code).toBe('not_found');
  });
});

describe('memory.recall', () => {
  it('returns the last N messages of the conversation, oldest first', async () => {
    const userId = randomUUID();
    const { message: first } = await append(userId, 'message 0');
    const conversationId = first.conversationId;
    for (let index = 1; index < 6; index += 1) {
      await clientBus.request(memoryAppend, {
        userId,
        conversationId,
        role: index % 2 === 0 ? 'user' : 'assistant',
        content: `message ${index}`,
      });
    }

    const { recent } = await clientBus.request(memoryRecall, {
      userId,
      conversationId,
      recentLimit: 3,
    });

    expect(recent.map((message) => message.content)).toEqual([
      'message 3',
      'message 4',
      'message 5',
    ]);
    expect(recent.map((message) => message.role)).toEqual(['assistant', 'user', 'assistant']);
    expect(recent.every((message) => message.conversationId === conversationId)).toBe(true);
  });

  it("counts each candidate in the answering model's tokens, each list within the limit", async () => {
    const userId = randomUUID();
    // Mostly Japanese: about one token a character, where the estimate sees a quarter.
    const note = (index: number) =>
      `Note ${index} about purple: 私の好きな色は紫です。今日は晴れです。`;
    const { message } = await append(userId, note(0));
    const conversationId = message.conversationId;
    for (let index = 1; index < 30; index += 1) await append(userId, note(index), conversationId);
    // A turn's recall leaves out what is still queued for indexing (its prompt shows the newest
    // messages anyway); these notes are to be found.
    await indexUserMessagesNow(db.pool, userId);
    const o200k = await loadTokenCounter('o200k_base');
    const sumOf = (items: { tokens: number }[]) =>
      items.reduce((sum, item) => sum + item.tokens, 0);

    // The five newest messages, and the notes that match the query besides them.
    const searched = await clientBus.request(memoryRecall, {
      userId,
      conversationId,
      query: 'purple note',
      tokenLimit: 400,
      tokenizer: 'o200k_base',
      recentLimit: 5,
    });
    // As many of the newest messages as the limit holds.
    const recall = (tokenizer: 'o200k_base' | 'estimate') =>
      clientBus.request(memoryRecall, { userId, conversationId, tokenLimit: 200, tokenizer });
    const counted = await recall('o200k_base');
    const estimated = await recall('estimate');

    for (const item of [
      ...searched.relevant,
      ...searched.recent.map((m) => ({ ...m, text: m.content })),
    ]) {
      expect(item.tokens).toBe(o200k.count(item.text));
    }
    expect(searched.relevant.length).toBeGreaterThan(0);
    expect(searched.recent).toHaveLength(5);
    expect(sumOf(counted.recent)).toBeLessThanOrEqual(200);
    expect(sumOf(counted.recent)).toBeGreaterThan(200 - o200k.count(note(29)));
    expect(counted.recent.at(-1)?.content).toBe(note(29));
    // The four-characters estimate lets through nearly twice what the model reads.
    expect(estimated.recent.reduce((sum, m) => sum + o200k.count(m.content), 0)).toBeGreaterThan(
      300,
    );
  });

  it("ends a turn's context at its own message, each reply after the question it answers", async () => {
    const userId = randomUUID();
    const ask = (content: string, conversationId?: string) =>
      append(userId, content, conversationId);
    const { message: q1 } = await ask('Which colour is the sky? PAR-1');
    const conversationId = q1.conversationId;
    // Three questions sent at once are all stored before the first is answered.
    const { message: q2 } = await ask('Which colour is the sea? PAR-2', conversationId);
    const { message: q3 } = await ask('Which colour is the sea at night? PAR-3', conversationId);
    // Stored after q2, with an earlier time: two appends at once on a real Postgres read their
    // clocks before either stores its message.
    await db.pool.query(
      "UPDATE memory.messages SET created_at = $2::timestamptz - interval '1 second' WHERE id = $1",
      [q3.id, q2.createdAt],
    );
    await clientBus.request(memoryAppend, {
      userId,
      conversationId,
      role: 'assistant',
      content: 'Blue. ANSWER-1',
      metadata: { replyTo: q1.id },
    });
    // Every question is searchable: the later one must not come back as a memory either.
    await indexUserMessagesNow(db.pool, userId);

    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId,
      messageId: q2.id,
      query: q2.content,
    });

    expect(recall.recent.map((message) => message.content)).toEqual([
      'Which colour is the sky? PAR-1',
      'Blue. ANSWER-1',
      'Which colour is the sea? PAR-2',
    ]);
    const recalled = [...recall.relevant.map((item) => item.text)].join('\n');
    expect(recalled).not.toContain('PAR-3');
  });

  it("answers another user's conversation exactly like a missing one", async () => {
    const owner = randomUUID();
    const other = randomUUID();
    const { message } = await append(owner, 'secret');
    await append(other, 'mine');

    const recall = (conversationId: string) =>
      clientBus.request(memoryRecall, { userId: other, conversationId });
    await expect(recall(message.conversationId)).rejects.toMatchObject({
      code: 'not_found',
      message: 'conversation not found',
    });
    await expect(recall(randomUUID())).rejects.toMatchObject({
      code: 'not_found',
      message: 'conversation not found',
    });
  });
});

describe('request validation at the edge', () => {
  const userId = randomUUID();

  it.each([
    ['empty content', 'memory.messages.append', { userId, role: 'user', content: '' }, 'content'],
    [
      'content over the limit',
      'memory.messages.append',
      { userId, role: 'user', content: 'x'.repeat(MESSAGE_MAX_CHARS + 1) },
      'content',
    ],
    [
      'a userId that is not a uuid',
      'memory.messages.append',
      { userId: 'not-a-uuid', role: 'user', content: 'hi' },
      'userId',
    ],
    [
      'a conversationId that is not a uuid',
      'memory.recall',
      { userId, conversationId: '1234' },
      'conversationId',
    ],
    [
      'recentLimit 0',
      'memory.recall',
      { userId, conversationId: randomUUID(), recentLimit: 0 },
      'recentLimit',
    ],
  ])('answers bad_request to %s', async (_label, subject, body, field) => {
    const reply = await sendRaw(clientBus, subject, body);

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining(field) },
    });
  });

  it('accepts content of exactly the limit', async () => {
    const { message } = await append(randomUUID(), 'y'.repeat(MESSAGE_MAX_CHARS));

    expect(message.content).toHaveLength(MESSAGE_MAX_CHARS);
  });

  it('rejects an invalid request in the client too, with bad_request', async () => {
    const error = await catchBusError(append(userId, ''));

    expect(error.code).toBe('bad_request');
  });
});

describe('episodes', () => {
  it("are named after the reply's time, so a late redelivery writes none twice", async () => {
    const userId = randomUUID();
    const request = await append(userId, 'Book a table for four on Friday');
    const conversationId = request.message.conversationId;
    const reply = await clientBus.request(memoryAppend, {
      userId,
      conversationId,
      role: 'assistant',
      content: 'Booked: Friday at eight, four people.',
    });
    // The job comes long after the turn, as a redelivery after an outage would.
    await db.pool.query(
      `UPDATE memory.messages SET created_at = '2026-03-14T09:26:00Z' WHERE id = $1`,
      [reply.message.id],
    );
    const job = {
      userId,
      conversationId,
      runId: randomUUID(),
      turnId: randomUUID(),
      userMessageId: request.message.id,
      replyMessageId: reply.message.id,
      recalledIds: [],
    };

    const turn = await readTurn(db.pool, job);
    if (!turn) throw new Error('the turn was not found');
    // No model answers here: the episode holds excerpts of the two messages.
    await writeEpisode(clientBus, db.pool, { modelTimeoutMs: 1_000 }, job, turn);
    await writeEpisode(clientBus, db.pool, { modelTimeoutMs: 1_000 }, job, turn);

    const { rows } = await db.pool.query<{ path: string; content: string }>(
      'SELECT path, content FROM memory.files WHERE user_id = $1',
      [userId],
    );
    expect(rows.map((row) => row.path)).toEqual([
      `episodes/2026-03-14/0926-${job.runId.slice(0, 8)}.md`,
    ]);
    expect(rows[0]?.content).toContain('Book a table for four on Friday');
    expect(rows[0]?.content).toContain('Booked: Friday at eight, four people.');
    expect(await readTurn(db.pool, { ...job, userId: randomUUID() })).toBeUndefined();
  });
});
