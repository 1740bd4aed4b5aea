import { randomUUID } from 'node:crypto';
import {
  MemoryConversationsListResponse,
  MemoryMessagesListResponse,
  memoryAppend,
} from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badRequest, type RouterFixture, startRouterFixture } from './router-fixture';

// History through the gateway: GET /v1/conversations and GET /v1/conversations/{id}/messages.
let harness: RouterFixture;
let conversationId: string;
// Alice's messages by content.
const messageIds = new Map<string, string>();

beforeAll(async () => {
  harness = await startRouterFixture('/v1/conversations', { services: ['memory'] });
  for (const content of ['one', 'two', 'three']) {
    const { message } = await harness.bus.request(memoryAppend, {
      userId: harness.alice.id,
      role: 'user',
      content,
    });
    conversationId = message.conversationId;
    messageIds.set(content, message.id);
  }
});

afterAll(async () => {
  await harness?.stop();
});

describe('GET /v1/conversations/{id}/messages', () => {
  it('pages newest first with the nextBefore cursor', async () => {
    const key = harness.alice.key;
    const first = await harness.call('GET', `/${conversationId}/messages?limit=2`, { key });
    const page = MemoryMessagesListResponse.parse(first.body);
    const second = await harness.call(
      'GET',
      `/${conversationId}/messages?limit=2&before=${page.nextBefore}`,
      { key },
    );

    expect(first.status).toBe(200);
    expect(page.messages.map((message) => message.content)).toEqual(['three', 'two']);
    expect(second.body).toEqual({
      messages: [expect.objectContaining({ content: 'one', role: 'user', conversationId })],
    });
  });

  it('answers the page around a message, for a search hit shown in its context', async () => {
    const key = harness.alice.key;
    const around = await harness.call(
      'GET',
      `/${conversationId}/messages?limit=2&around=${messageIds.get('two')}`,
      { key },
    );
    const page = MemoryMessagesListResponse.parse(around.body);

    expect(around.status).toBe(200);
    // Itself and one older message: a page leans to the older side by the message itself.
    expect(page.messages.map((message) => message.content)).toEqual(['two', 'one']);
    expect(page.nextBefore).toBeUndefined();
    const missing = await harness.call(
      'GET',
      `/${conversationId}/messages?around=${randomUUID()}`,
      { key },
    );
    expect(missing).toEqual({
      status: 404,
      body: { error: { code: 'not_found', message: 'message not found' } },
    });
    const both = await harness.call(
      'GET',
      `/${conversationId}/messages?around=${messageIds.get('two')}&before=1`,
      { key },
    );
    expect(both.status).toBe(400);
  });

  it("answers 404 for another user's conversation, like a missing one", async () => {
    const notFound = {
      status: 404,
      body: { error: { code: 'not_found', message: 'conversation not found' } },
    };

    expect(
      await harness.call('GET', `/${conversationId}/messages`, { key: harness.bob.key }),
    ).toEqual(notFound);
    expect(
      await harness.call('GET', `/${randomUUID()}/messages`, { key: harness.alice.key }),
    ).toEqual(notFound);
  });

  it('refuses a bad id, limit or cursor, and unknown parameters', async () => {
    const key = harness.alice.key;
    expect(await harness.call('GET', '/nope/messages', { key })).toEqual(badRequest(/^id: /));
    for (const query of [
      'limit=0',
      'limit=201',
      'before=-1',
      'before=x',
      'around=2',
      'userId=me',
    ]) {
      const reply = await harness.call('GET', `/${conversationId}/messages?${query}`, { key });
      expect(reply.status, query).toBe(400);
    }
  });

  it('needs a key', async () => {
    expect((await harness.call('GET', `/${conversationId}/messages`)).status).toBe(401);
  });
});

describe('GET /v1/conversations', () => {
  it("lists the key's user's conversations and names the persistent one", async () => {
    const alice = await harness.call('GET', '/', { key: harness.alice.key });
    const bob = await harness.call('GET', '/?limit=5', { key: harness.bob.key });

    expect(MemoryConversationsListResponse.parse(alice.body)).toEqual({
      conversations: [
        expect.objectContaining({ id: conversationId, title: 'one', isDefault: true }),
      ],
      defaultConversationId: conversationId,
    });
    expect(bob.body).toEqual({ conversations: [], defaultConversationId: null });
  });
});
