import { randomUUID } from 'node:crypto';
import { ErrorBody, ImportMessagesResponse, MemorySearchResponse } from '@jarvis/contracts';
import { type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('the memory API through the gateway', () => {
  let fixture: StackFixture;
  let alice: string;
  let bob: string;

  const call = (method: string, path: string, key: string, body?: unknown, headers = {}) =>
    fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    fixture = await startStackFixture();
    alice = (await fixture.createUser('alice')).apiKey;
    bob = (await fixture.createUser('bob')).apiKey;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('imports a past conversation in order and finds it by meaning, with its metadata', async () => {
    const conversationId = randomUUID();
    const messages = [
      {
        role: 'user',
        content: 'We booked the flights to Lisbon for the 14th of June.',
        createdAt: '2023-03-02T10:00:00Z',
        metadata: { source: 'old-chat', n: 1 },
      },
      {
        role: 'assistant',
        content: 'Great, I noted the Lisbon trip.',
        createdAt: '2023-03-02T10:00:05Z',
        metadata: { source: 'old-chat', n: 2 },
      },
      {
        role: 'user',
        content: 'My dentist appointment moved to Thursday morning.',
        createdAt: '2023-03-05T09:00:00Z',
        metadata: { source: 'old-chat', n: 3 },
      },
    ];
    const imported = await call(
      'POST',
      `/v1/conversations/${conversationId}/messages/import`,
      alice,
      { messages },
      { 'idempotency-key': 'history-1' },
    );
    expect(imported.status).toBe(200);
    expect(ImportMessagesResponse.parse(await imported.json())).toEqual({ imported: 3 });

    // The same call again (a client retry) stores nothing twice, and answers as the first did.
    const retried = await call(
      'POST',
      `/v1/conversations/${conversationId}/messages/import`,
      alice,
      { messages },
      { 'idempotency-key': 'history-1' },
    );
    expect(ImportMessagesResponse.parse(await retried.json())).toEqual({ imported: 3 });

    const search = await call('POST', '/v1/memory/search', alice, {
      query: 'when is the trip to Lisbon?',
      limit: 2,
    });
    expect(search.status).toBe(200);
    const { results } = MemorySearchResponse.parse(await search.json());
    const flights = results.find((result) => result.text.includes('flights'));
    expect(flights).toMatchObject({
      kind: 'message',
      text: 'We booked the flights to Lisbon for the 14th of June.',
      metadata: { source: 'old-chat', n: 1 },
      createdAt: '2023-03-02T10:00:00.000Z',
      conversationId,
    });
    expect(results.length).toBeLessThanOrEqual(2);

    // Bob sees none of it, by search or by importing into Alice's conversation id.
    const bobSearch = MemorySearchResponse.parse(
      await (await call('POST', '/v1/memory/search', bob, { query: 'Lisbon trip dentist' })).json(),
    );
    expect(bobSearch.results).toEqual([]);
    const intrusion = await call(
      'POST',
      `/v1/conversations/${conversationId}/messages/import`,
      bob,
      { messages },
    );
    expect(intrusion.status).toBe(404);
  });

  it('imports a ChatGPT data export once, however often it is sent', async () => {
    const exported = [
      {
        conversation_id: 'chatgpt-1',
        title: 'Garden',
        create_time: 1_690_000_000,
        current_node: 'a',
        mapping: {
          u: {
            parent: null,
            message: {
              author: { role: 'user' },
              create_time: 1_690_000_010,
              content: { content_type: 'text', parts: ['Which tomatoes grow best on a balcony?'] },
            },
          },
          a: {
            parent: 'u',
            message: {
              author: { role: 'assistant' },
              create_time: 1_690_000_020,
              content: { content_type: 'text', parts: ['Cherry tomatoes in deep pots.'] },
            },
          },
        },
      },
    ];
    const first = await call('POST', '/v1/conversations/import/chatgpt', alice, exported);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ conversations: 1, imported: 2 });
    const again = await call('POST', '/v1/conversations/import/chatgpt', alice, exported);
    expect(await again.json()).toEqual({ conversations: 1, imported: 0 });

    const { results } = MemorySearchResponse.parse(
      await (
        await call('POST', '/v1/memory/search', alice, { query: 'tomatoes on the balcony' })
      ).json(),
    );
    expect(results[0]?.metadata).toMatchObject({ source: 'chatgpt', title: 'Garden' });

    const notAnExport = await call('POST', '/v1/conversations/import/chatgpt', alice, { hello: 1 });
    expect(notAnExport.status).toBe(400);
  });

  it('makes chat messages searchable as soon as they are stored', async () => {
    const chat = await fixture.chat(alice, { message: 'my new dog is called Biscuit' });
    expect(chat.status).toBe(200);
    const { results } = MemorySearchResponse.parse(
      await (
        await call('POST', '/v1/memory/search', alice, { query: 'what is the name of my dog?' })
      ).json(),
    );
    expect(results.map((result) => result.text)).toContain('my new dog is called Biscuit');
  });

  it('records each agent run as an episode file', async () => {
    const chat = await fixture.chat(bob, { message: 'please book a table for four on Friday' });
    expect(chat.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    const listing = await waitFor(
      async () => {
        const response = await call('GET', `/v1/memory/files?prefix=episodes/${today}/`, bob);
        const body = z
          .object({ files: z.array(z.object({ path: z.string() })) })
          .parse(await response.json());
        return body.files.length > 0 ? body.files : undefined;
      },
      { timeoutMs: 15_000, what: 'an episode file' },
    );
    const path = listing[0]?.path ?? '';
    const read = await call(
      'GET',
      `/v1/memory/files/content?path=${encodeURIComponent(path)}`,
      bob,
    );
    const { file } = z.object({ file: z.object({ content: z.string() }) }).parse(await read.json());
    expect(file.content).toContain('please book a table for four on Friday');
    expect(file.content).toContain('## Jarvis answered');
  });

  it('keeps memory files with their history', async () => {
    const write = await call('PUT', '/v1/memory/files/content', alice, {
      path: 'notes/plan.md',
      content: 'v1',
    });
    expect(write.status).toBe(200);
    await call('PUT', '/v1/memory/files/content', alice, { path: 'notes/plan.md', content: 'v2' });
    const read = await call('GET', '/v1/memory/files/content?path=notes/plan.md', alice);
    expect(await read.json()).toMatchObject({
      file: { path: 'notes/plan.md', content: 'v2', version: 2 },
    });
    const hidden = await call('GET', '/v1/memory/files/content?path=notes/plan.md', bob);
    expect(hidden.status).toBe(404);
  });

  it('answers bad input with a 400 that names the problem', async () => {
    const cases: [string, string, unknown, RegExp][] = [
      ['/v1/conversations/not-a-uuid/messages/import', 'POST', { messages: [] }, /^id: /],
      [
        `/v1/conversations/${randomUUID()}/messages/import`,
        'POST',
        { messages: [] },
        /^messages: /,
      ],
      [
        `/v1/conversations/${randomUUID()}/messages/import`,
        'POST',
        { messages: [{ role: 'user', content: 'x', createdAt: 'yesterday' }] },
        /^messages\.0\.createdAt: /,
      ],
      ['/v1/memory/search', 'POST', { query: '' }, /^query: /],
      ['/v1/memory/search', 'POST', { query: 'x', limit: 101 }, /^limit: /],
      ['/v1/memory/files/content', 'PUT', { path: '../etc/passwd', content: 'x' }, /^path: /],
    ];
    for (const [path, method, body, message] of cases) {
      const response = await call(method, path, alice, body);
      expect(response.status, path).toBe(400);
      const { error } = ErrorBody.parse(await response.json());
      expect(error.code).toBe('bad_request');
      expect(error.message).toMatch(message);
    }
  });
});
