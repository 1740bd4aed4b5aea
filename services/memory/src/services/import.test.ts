import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  IMPORT_MAX_MESSAGES,
  type ImportedMessage,
  type MemoryImportRequest,
  memoryAppend,
  memoryImport,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;
let countRows: MemoryFixture['countRows'];

beforeAll(async () => {
  memory = await startMemoryFixture('memory-import');
  ({ db, clientBus, countRows } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

function message(content: string, createdAt: string, role: ImportedMessage['role'] = 'user') {
  return { role, content, createdAt };
}

function importBatch(request: Omit<MemoryImportRequest, 'batchKey'> & { batchKey?: string }) {
  return clientBus.request(memoryImport, { batchKey: 'export-1', ...request });
}

async function recallContents(userId: string, conversationId: string): Promise<string[]> {
  const { recent } = await clientBus.request(memoryRecall, {
    userId,
    conversationId,
    recentLimit: 500,
  });
  return recent.map((stored) => stored.content);
}

describe('memory.messages.import', () => {
  it('keeps the import order, whatever the messages say about when they were written', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();

    await importBatch({
      userId,
      conversationId,
      firstIndex: 0,
      messages: [
        message('first', '2023-05-01T10:00:00Z'),
        message('second', '2023-04-01T10:00:00Z', 'assistant'),
        message('third', '2023-06-01T10:00:00Z'),
      ],
    });
    await importBatch({
      userId,
      conversationId,
      firstIndex: 3,
      messages: [
        message('fourth', '2022-01-01T00:00:00Z', 'assistant'),
        message('fifth', '2023-05-01T10:00:00Z'),
      ],
    });

    expect(await recallContents(userId, conversationId)).toEqual([
      'first',
      'second',
      'third',
      'fourth',
      'fifth',
    ]);
  });

  it('imports nothing the second time the same batch arrives', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const request = {
      userId,
      conversationId,
      firstIndex: 0,
      messages: [
        message('I booked flights to Lisbon.', '2023-02-03T18:20:00Z'),
        message('Lovely, try the custard tarts.', '2023-02-03T18:21:00Z', 'assistant'),
      ],
    };

    const first = await importBatch(request);
    const retry = await importBatch(request);

    expect(first.imported).toBe(2);
    expect(retry.imported).toBe(0);
    expect(await recallContents(userId, conversationId)).toEqual([
      'I booked flights to Lisbon.',
      'Lovely, try the custard tarts.',
    ]);
    expect(
      await countRows('SELECT count(*) FROM memory.embeddings WHERE user_id = $1', [userId]),
    ).toBe(2);
    // Term statistics count each message once, or search would misjudge how rare a word is.
    const { rows } = await db.pool.query<{ items: string }>(
      'SELECT items FROM memory.item_counts WHERE user_id = $1',
      [userId],
    );
    expect(rows.map((row) => Number(row.items))).toEqual([2]);
  });

  it('imports only the new messages of a retried batch that grew', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const messages = [
      message('one', '2023-01-01T00:00:00Z'),
      message('two', '2023-01-01T00:01:00Z'),
      message('three', '2023-01-01T00:02:00Z'),
    ];
    await importBatch({ userId, conversationId, firstIndex: 0, messages: messages.slice(0, 2) });

    const { imported } = await importBatch({ userId, conversationId, firstIndex: 0, messages });

    expect(imported).toBe(1);
    expect(await recallContents(userId, conversationId)).toEqual(['one', 'two', 'three']);
  });

  it('treats another batch key as other messages', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const messages = [message('same words', '2023-01-01T00:00:00Z')];

    await importBatch({ userId, conversationId, firstIndex: 0, messages, batchKey: 'export-a' });
    const { imported } = await importBatch({
      userId,
      conversationId,
      firstIndex: 0,
      messages,
      batchKey: 'export-b',
    });

    expect(imported).toBe(1);
    expect(await recallContents(userId, conversationId)).toEqual(['same words', 'same words']);
  });

  it('creates the conversation for the importing user under the given id', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();

    await importBatch({
      userId,
      conversationId,
      firstIndex: 0,
      messages: [message('hello from the archive', '2023-01-01T00:00:00Z')],
    });

    const { rows } = await db.pool.query<{ user_id: string; is_default: boolean }>(
      'SELECT user_id, is_default FROM memory.conversations WHERE id = $1',
      [conversationId],
    );
    expect(rows).toEqual([{ user_id: userId, is_default: false }]);
    const { recent } = await clientBus.request(memoryRecall, { userId, conversationId });
    expect(recent.map((stored) => stored.conversationId)).toEqual([conversationId]);
    // The user's default conversation is a different one.
    const appended = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'a live message',
    });
    expect(appended.message.conversationId).not.toBe(conversationId);
  });

  it('adds to a conversation the user already has, after its messages', async () => {
    const userId = randomUUID();
    const { message: live } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'said live',
    });

    const { imported } = await importBatch({
      userId,
      conversationId: live.conversationId,
      firstIndex: 0,
      messages: [message('imported later', '2020-01-01T00:00:00Z')],
    });

    expect(imported).toBe(1);
    expect(await recallContents(userId, live.conversationId)).toEqual([
      'said live',
      'imported later',
    ]);
  });

  it("answers not_found for another user's conversation and stores nothing", async () => {
    const owner = randomUUID();
    const intruder = randomUUID();
    const conversationId = randomUUID();
    await importBatch({
      userId: owner,
      conversationId,
      firstIndex: 0,
      messages: [message('private', '2023-01-01T00:00:00Z')],
    });

    const error = await catchBusError(
      importBatch({
        userId: intruder,
        conversationId,
        firstIndex: 1,
        messages: [message('let me in', '2023-01-02T00:00:00Z')],
      }),
    );

    expect(error.code).toBe('not_found');
    expect(error.message).toBe('conversation not found');
    expect(await recallContents(owner, conversationId)).toEqual(['private']);
    expect(
      await countRows('SELECT count(*) FROM memory.messages WHERE user_id = $1', [intruder]),
    ).toBe(0);
    expect(
      await countRows('SELECT count(*) FROM memory.embeddings WHERE user_id = $1', [intruder]),
    ).toBe(0);
  });

  it('keeps the metadata, time and author each message was imported with', async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const metadata = { source: 'whatsapp', line: 17, tags: ['family'], reply: { to: 16 } };

    await importBatch({
      userId,
      conversationId,
      firstIndex: 0,
      messages: [
        {
          role: 'user',
          content: 'Grandma turns ninety on the fifth of June.',
          createdAt: '2019-06-01T08:30:00+02:00',
          author: 'Clara',
          metadata,
        },
        message('Without any metadata.', '2019-06-01T08:31:00Z', 'assistant'),
      ],
    });

    const { recent } = await clientBus.request(memoryRecall, { userId, conversationId });
    expect(recent.map(({ role, content, createdAt }) => ({ role, content, createdAt }))).toEqual([
      {
        role: 'user',
        content: 'Grandma turns ninety on the fifth of June.',
        createdAt: '2019-06-01T06:30:00.000Z',
      },
      {
        role: 'assistant',
        content: 'Without any metadata.',
        createdAt: '2019-06-01T08:31:00.000Z',
      },
    ]);
    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: "When is grandma's birthday? She turns ninety",
    });
    expect(results[0]).toMatchObject({
      text: 'Grandma turns ninety on the fifth of June.',
      metadata,
      createdAt: '2019-06-01T06:30:00.000Z',
      conversationId,
    });
    expect(results.find((result) => result.text === 'Without any metadata.')?.metadata).toEqual({});
    const { rows } = await db.pool.query<{ author: string | null }>(
      'SELECT author FROM memory.messages WHERE conversation_id = $1 ORDER BY seq',
      [conversationId],
    );
    expect(rows).toEqual([{ author: 'Clara' }, { author: null }]);
  });

  it(`accepts ${IMPORT_MAX_MESSAGES} messages in one batch and refuses one more`, async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const messages = Array.from({ length: IMPORT_MAX_MESSAGES + 1 }, (_, index) =>
      message(`message ${index}`, '2023-01-01T00:00:00Z'),
    );

    const tooMany = await sendRaw(clientBus, 'memory.messages.import', {
      userId,
      conversationId,
      batchKey: 'big',
      firstIndex: 0,
      messages,
    });
    expect(tooMany).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining('messages') },
    });
    expect(
      await countRows('SELECT count(*) FROM memory.messages WHERE user_id = $1', [userId]),
    ).toBe(0);

    const { imported } = await clientBus.request(
      memoryImport,
      { userId, conversationId, batchKey: 'big', firstIndex: 0, messages: messages.slice(1) },
      // Indexing 5,000 messages takes seconds, more on a loaded two-core machine.
      { timeoutMs: 30_000 },
    );
    expect(imported).toBe(IMPORT_MAX_MESSAGES);
    const { recent } = await clientBus.request(memoryRecall, {
      userId,
      conversationId,
      recentLimit: 2,
    });
    expect(recent.map((stored) => stored.content)).toEqual([
      `message ${IMPORT_MAX_MESSAGES - 1}`,
      `message ${IMPORT_MAX_MESSAGES}`,
    ]);
  }, 60_000);

  it.each([
    ['no messages', { messages: [] }, 'messages'],
    ['a negative firstIndex', { firstIndex: -1 }, 'firstIndex'],
    ['an empty batchKey', { batchKey: '' }, 'batchKey'],
    ['a conversationId that is not a uuid', { conversationId: 'chat-1' }, 'conversationId'],
    [
      'a message without a time',
      { messages: [{ role: 'user', content: 'when was this?' }] },
      'createdAt',
    ],
    [
      'a message with an unknown role',
      { messages: [{ role: 'narrator', content: 'once upon', createdAt: '2023-01-01T00:00:00Z' }] },
      'role',
    ],
  ])('answers bad_request to %s', async (_label, override, field) => {
    const reply = await sendRaw(clientBus, 'memory.messages.import', {
      userId: randomUUID(),
      conversationId: randomUUID(),
      batchKey: 'export-1',
      firstIndex: 0,
      messages: [message('hello', '2023-01-01T00:00:00Z')],
      ...override,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining(field) },
    });
  });
});
