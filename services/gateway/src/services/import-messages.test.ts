import { randomUUID } from 'node:crypto';
import { MemoryConversationsListResponse, MemoryMessagesListResponse } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from '../routes/router-fixture';
import { createUser } from './api-keys';

// Imports through the gateway: a bad record answers 400 naming it and stores nothing, and an
// Idempotency-Key holds to the one request it was first sent with.
let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', { services: ['memory'] });
});

afterAll(async () => {
  await harness?.stop();
});

// A user of its own per test, so "nothing stored" is the user having no conversation at all.
async function newUser(): Promise<TestUser> {
  const created = await createUser(harness.db.pool, `user-${randomUUID()}`);
  return { id: created.user.id, key: created.apiKey };
}

async function conversationsOf(user: TestUser) {
  const listed = await harness.call('GET', '/conversations', { key: user.key });
  return MemoryConversationsListResponse.parse(listed.body).conversations;
}

async function contentsOf(user: TestUser, conversationId: string): Promise<string[]> {
  const listed = await harness.call('GET', `/conversations/${conversationId}/messages`, {
    key: user.key,
  });
  return MemoryMessagesListResponse.parse(listed.body)
    .messages.map((message) => message.content)
    .reverse();
}

function message(content: string, createdAt = '2024-01-02T10:00:00Z') {
  return { role: 'user', content, createdAt };
}

async function importWithKey(user: TestUser, conversationId: string, key: string, body: unknown) {
  const response = await fetch(`${harness.url}/conversations/${conversationId}/messages/import`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${user.key}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

function chatGptConversation(id: string, time: number) {
  return {
    conversation_id: id,
    title: id,
    create_time: 1_700_000_000,
    current_node: 'a',
    mapping: {
      u: {
        parent: null,
        message: {
          author: { role: 'user' },
          create_time: 1_700_000_100,
          content: { parts: ['Hello'] },
        },
      },
      a: {
        parent: 'u',
        message: { author: { role: 'assistant' }, create_time: time, content: { parts: ['Hi'] } },
      },
    },
  };
}

describe('dates outside years 0001-9999', () => {
  it('refuses a messages import with year 0000, naming the message, and stores nothing', async () => {
    const user = await newUser();
    const reply = await harness.call('POST', `/conversations/${randomUUID()}/messages/import`, {
      key: user.key,
      body: { messages: [message('fine'), message('ancient', '0000-01-01T00:00:00Z')] },
    });

    expect(reply).toEqual(badRequest('messages.1.createdAt: year must be 0001-9999'));
    expect(await conversationsOf(user)).toEqual([]);
  });

  it('refuses a ChatGPT export whose second conversation is dated year 0000, storing none', async () => {
    const user = await newUser();
    const reply = await harness.call('POST', '/conversations/import/chatgpt', {
      key: user.key,
      body: [
        chatGptConversation('first', 1_700_000_200),
        chatGptConversation('second', -62_167_219_200),
      ],
    });

    expect(reply).toEqual(
      badRequest('conversation 2, message 2: create_time -62167219200: year must be 0001-9999'),
    );
    expect(await conversationsOf(user)).toEqual([]);
  });

  it('refuses a ChatGPT export with a time past what a date can hold', async () => {
    const user = await newUser();
    const outOfRange = { ...chatGptConversation('far', 1_700_000_200), create_time: 1e20 };
    const reply = await harness.call('POST', '/conversations/import/chatgpt', {
      key: user.key,
      body: [outOfRange],
    });

    expect(reply).toEqual(
      badRequest('conversation 1: create_time 100000000000000000000: year must be 0001-9999'),
    );
    expect(await conversationsOf(user)).toEqual([]);
  });

  it('refuses a memory import file with year 0000, naming the line, and stores nothing', async () => {
    const user = await newUser();
    const conversationId = randomUUID();
    const lines = [
      { type: 'header', format: 'jarvis-memory', version: 1, exportedAt: '2024-05-01T10:00:00Z' },
      {
        type: 'conversation',
        id: conversationId,
        isDefault: false,
        createdAt: '2024-05-01T10:00:00Z',
      },
      {
        type: 'message',
        id: randomUUID(),
        conversationId,
        role: 'user',
        content: 'ok',
        author: null,
        metadata: {},
        createdAt: '2024-05-01T10:00:00Z',
      },
      {
        type: 'message',
        id: randomUUID(),
        conversationId,
        role: 'user',
        content: 'old',
        author: null,
        metadata: {},
        createdAt: '0000-01-01T00:00:00Z',
      },
    ];
    const response = await fetch(`${harness.url}/memory/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/x-ndjson' },
      body: lines.map((line) => JSON.stringify(line)).join('\n'),
    });

    expect({ status: response.status, body: await response.json() }).toEqual(
      badRequest('line 4: createdAt: year must be 0001-9999'),
    );
    expect(await conversationsOf(user)).toEqual([]);
  });
});

describe('an Idempotency-Key on a messages import', () => {
  it('answers the same request again as the first time, storing nothing twice', async () => {
    const user = await newUser();
    const conversationId = randomUUID();
    const body = { messages: [message('one'), message('two')] };

    const first = await importWithKey(user, conversationId, 'import-1', body);
    const again = await importWithKey(user, conversationId, 'import-1', body);

    expect(first).toEqual({ status: 200, body: { imported: 2 } });
    expect(again).toEqual(first);
    expect(await contentsOf(user, conversationId)).toEqual(['one', 'two']);
  });

  it('answers 422 to the key with other messages or another conversation, storing nothing', async () => {
    const user = await newUser();
    const conversationId = randomUUID();
    await importWithKey(user, conversationId, 'import-2', { messages: [message('one')] });
    const refused = {
      status: 422,
      body: {
        error: {
          code: 'idempotency_key_reused',
          message: 'this Idempotency-Key was used with another request; nothing was imported',
        },
      },
    };

    const extra = { messages: [message('one'), message('planted')] };
    expect(await importWithKey(user, conversationId, 'import-2', extra)).toEqual(refused);
    const elsewhere = randomUUID();
    const moved = { messages: [message('one')] };
    expect(await importWithKey(user, elsewhere, 'import-2', moved)).toEqual(refused);

    expect(await contentsOf(user, conversationId)).toEqual(['one']);
    expect((await conversationsOf(user)).map((conversation) => conversation.id)).toEqual([
      conversationId,
    ]);
  });

  it('keeps one user’s key apart from another’s', async () => {
    const [first, second] = [await newUser(), await newUser()];
    const body = { messages: [message('mine')] };
    expect((await importWithKey(first, randomUUID(), 'shared', body)).status).toBe(200);
    const other = { messages: [message('theirs')] };
    expect(await importWithKey(second, randomUUID(), 'shared', other)).toEqual({
      status: 200,
      body: { imported: 1 },
    });
  });
});
