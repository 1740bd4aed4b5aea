import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import {
  memoryAppend,
  memoryConversationsList,
  memoryMessagesGet,
  memoryMessagesList,
  type StoredMessage,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-history');
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

async function say(userId: string, content: string, conversationId?: string) {
  const role = content.startsWith('>') ? 'assistant' : 'user';
  const { message } = await clientBus.request(memoryAppend, {
    userId,
    role,
    content,
    ...(conversationId ? { conversationId } : {}),
  });
  return message;
}

describe('memory.messages.get', () => {
  it("answers the user's message, and not_found for a forgotten or another user's one", async () => {
    const userId = randomUUID();
    const reply = await say(userId, '> The reply.');
    const forgotten = await say(userId, '> Forget me.', reply.conversationId);
    await db.pool.query('UPDATE memory.messages SET forgotten_at = now() WHERE id = $1', [
      forgotten.id,
    ]);
    const get = (asker: string, id: string) =>
      catchBusError(clientBus.request(memoryMessagesGet, { userId: asker, id }));

    expect(await clientBus.request(memoryMessagesGet, { userId, id: reply.id })).toEqual({
      message: reply,
    });
    for (const error of [
      await get(userId, forgotten.id),
      await get(randomUUID(), reply.id),
      await get(userId, randomUUID()),
    ]) {
      expect(error).toMatchObject({ code: 'not_found', message: 'message not found' });
    }
  });
});

describe('memory.messages.list', () => {
  it('pages through a conversation newest first, by sequence, without forgotten messages', async () => {
    const userId = randomUUID();
    const sent = [];
    for (const text of ['one', '> two', 'three', '> four', 'five'])
      sent.push(await say(userId, text));
    const conversationId = sent[0]?.conversationId ?? '';
    await db.pool.query('UPDATE memory.messages SET forgotten_at = now() WHERE id = $1', [
      sent[3]?.id,
    ]);

    const first = await clientBus.request(memoryMessagesList, { userId, conversationId, limit: 2 });
    const second = await clientBus.request(memoryMessagesList, {
      userId,
      conversationId,
      limit: 2,
      before: first.nextBefore,
    });

    expect(first.messages.map((message) => message.content)).toEqual(['five', 'three']);
    expect(first.messages[0]).toEqual({ ...sent[4], seq: expect.any(Number) });
    expect(second.messages.map((message) => message.content)).toEqual(['> two', 'one']);
    expect(second.nextBefore).toBeUndefined();
    const seqs = [...first.messages, ...second.messages].map((message) => message.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
  });

  it('answers the page around a message: as many newer as older, leaning when one side runs out', async () => {
    const userId = randomUUID();
    const sent: StoredMessage[] = [];
    // Another conversation's message, stored in between, is not this one's context.
    let elsewhere = '';
    for (let index = 1; index <= 9; index += 1) {
      sent.push(await say(userId, index % 2 ? `m${index}` : `> m${index}`));
      if (index === 4) elsewhere = (await say(randomUUID(), 'm4½')).id;
    }
    const conversationId = sent[0]?.conversationId ?? '';
    await db.pool.query('UPDATE memory.messages SET forgotten_at = now() WHERE id = $1', [
      sent[5]?.id,
    ]);
    const around = (index: number, limit: number) =>
      clientBus.request(memoryMessagesList, {
        userId,
        conversationId,
        limit,
        around: sent[index]?.id,
      });
    const contents = (page: { messages: { content: string }[] }) =>
      page.messages.map((message) => message.content.replace('> ', ''));

    // m5 in the middle, m6 forgotten; older pages follow from nextBefore.
    const middle = await around(4, 4);
    expect(contents(middle)).toEqual(['m7', 'm5', 'm4', 'm3']);
    const older = await clientBus.request(memoryMessagesList, {
      userId,
      conversationId,
      limit: 4,
      before: middle.nextBefore,
    });
    expect(contents(older)).toEqual(['m2', 'm1']);
    expect(older.nextBefore).toBeUndefined();
    // Near either end the page fills from the other side.
    const newest = await around(8, 4);
    expect(contents(newest)).toEqual(['m9', 'm8', 'm7', 'm5']);
    expect(newest.nextBefore).toBe(newest.messages.at(-1)?.seq);
    const oldest = await around(0, 4);
    expect(contents(oldest)).toEqual(['m4', 'm3', 'm2', 'm1']);
    expect(oldest.nextBefore).toBeUndefined();
    const all = await around(2, 20);
    expect(contents(all)).toEqual(['m9', 'm8', 'm7', 'm5', 'm4', 'm3', 'm2', 'm1']);
    expect(all.nextBefore).toBeUndefined();

    for (const id of [sent[5]?.id, elsewhere, randomUUID()]) {
      const error = await catchBusError(
        clientBus.request(memoryMessagesList, { userId, conversationId, around: id }),
      );
      expect(error.toInfo()).toEqual({ code: 'not_found', message: 'message not found' });
    }
    const both = await catchBusError(
      clientBus.request(memoryMessagesList, {
        userId,
        conversationId,
        around: sent[4]?.id,
        before: 5,
      }),
    );
    expect(both.toInfo()).toEqual({
      code: 'bad_request',
      message: 'around and before cannot be combined',
    });
  });

  it("answers not_found for another user's conversation, like a missing one", async () => {
    const { conversationId } = await say(randomUUID(), 'private');

    for (const id of [conversationId, randomUUID()]) {
      const error = await catchBusError(
        clientBus.request(memoryMessagesList, { userId: randomUUID(), conversationId: id }),
      );
      expect(error.toInfo()).toEqual({ code: 'not_found', message: 'conversation not found' });
    }
  });
});

describe('memory.conversations.list', () => {
  it('lists the most recently written to first, titled by the first user message', async () => {
    const userId = randomUUID();
    const persistent = await say(userId, 'Hello there\nsecond line');
    const other = randomUUID();
    await db.pool.query('INSERT INTO memory.conversations (id, user_id) VALUES ($1, $2)', [
      other,
      userId,
    ]);
    const long = `Plan ${'the trip to Lisbon and '.repeat(6)}more`;
    await say(userId, long, other);
    // A conversation with nothing but forgotten messages is not listed.
    const gone = randomUUID();
    await db.pool.query('INSERT INTO memory.conversations (id, user_id) VALUES ($1, $2)', [
      gone,
      userId,
    ]);
    const forgotten = await say(userId, 'forget me', gone);
    await db.pool.query('UPDATE memory.messages SET forgotten_at = now() WHERE id = $1', [
      forgotten.id,
    ]);

    const first = await clientBus.request(memoryConversationsList, { userId, limit: 1 });
    const second = await clientBus.request(memoryConversationsList, {
      userId,
      limit: 1,
      before: first.nextBefore,
    });

    expect(first.conversations).toEqual([
      {
        id: other,
        // Cut at a word, within 80 characters.
        title: 'Plan the trip to Lisbon and the trip to Lisbon and the trip to Lisbon and the…',
        isDefault: false,
        createdAt: expect.any(String),
        lastMessageAt: expect.any(String),
        lastMessageSeq: expect.any(Number),
      },
    ]);
    expect(first.defaultConversationId).toBe(persistent.conversationId);
    expect(second.conversations).toMatchObject([
      { id: persistent.conversationId, title: 'Hello there', isDefault: true },
    ]);
    expect(second.nextBefore).toBeUndefined();
    const stranger = await clientBus.request(memoryConversationsList, { userId: randomUUID() });
    expect(stranger).toEqual({ conversations: [], defaultConversationId: null });
  });
});
