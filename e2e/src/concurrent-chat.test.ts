import { ChatResponse, MemoryMessagesListResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('messages sent at once to one conversation', () => {
  let fixture: StackFixture;

  beforeAll(async () => {
    fixture = await startStackFixture();
  });

  afterAll(async () => {
    await fixture?.close();
  });

  const post = (apiKey: string, body: unknown, idempotencyKey?: string) =>
    fetch(`${fixture.stack.gatewayUrl}/v1/chat`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: JSON.stringify(body),
    });

  async function listMessages(apiKey: string, conversationId: string) {
    const response = await fetch(
      `${fixture.stack.gatewayUrl}/v1/conversations/${conversationId}/messages?limit=200`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(response.status).toBe(200);
    const { messages } = MemoryMessagesListResponse.parse(await response.json());
    return messages.reverse();
  }

  it('answers each its own question, and stores the replies in the order of the questions', async () => {
    const { apiKey } = await fixture.createUser('parallel');
    const first = ChatResponse.parse(await (await post(apiKey, { message: 'hello' })).json());
    fixture.fake.reset();
    const questions = Array.from({ length: 8 }, (_, index) => `PAR-${index}`);

    const responses = await Promise.all(
      questions.map((message) => post(apiKey, { message, conversationId: first.conversationId })),
    );

    expect(responses.map((response) => response.status)).toEqual(questions.map(() => 200));
    const answers = await Promise.all(
      responses.map(async (response) => ChatResponse.parse(await response.json())),
    );
    expect(answers.map((answer) => answer.reply.content)).toEqual(
      questions.map((question) => `fake reply to: ${question}`),
    );
    const messages = (await listMessages(apiKey, first.conversationId)).slice(2);
    const asked = messages.filter((message) => message.role === 'user').map((m) => m.content);
    const replied = messages.filter((message) => message.role === 'assistant');
    expect(asked.toSorted()).toEqual(questions);
    // In the order the questions were stored, each after its own question.
    expect(replied.map((message) => message.content)).toEqual(
      asked.map((question) => `fake reply to: ${question}`),
    );
    for (const [index, reply] of replied.entries()) {
      const question = messages.find((message) => message.content === asked[index]);
      expect(reply.seq).toBeGreaterThan(question?.seq ?? Number.POSITIVE_INFINITY);
    }
    // Each prompt ends with its own question, after the earlier ones and their answers, and
    // holds none of the questions stored after it (as a recent message or a memory).
    const prompts = fixture.fake.chatRequests().filter(isTurnRequest).map(sentMessages);
    expect(prompts).toHaveLength(8);
    for (const prompt of prompts) {
      const own = prompt.at(-1)?.content ?? '';
      const position = asked.indexOf(own);
      expect(position).toBeGreaterThanOrEqual(0);
      const dialogue = prompt.slice(1).map((message) => message.content);
      expect(dialogue.slice(-1 - 2 * position)).toEqual([
        ...asked.slice(0, position).flatMap((question) => [question, `fake reply to: ${question}`]),
        own,
      ]);
      const text = JSON.stringify(prompt);
      for (const later of asked.slice(position + 1)) expect(text).not.toContain(later);
    }
  });

  it('answers a retry with the same Idempotency-Key with the same turn, and refuses another body', async () => {
    const { apiKey } = await fixture.createUser('retrying');
    const body = { message: 'book a table for two' };

    const first = await post(apiKey, body, 'key-1');
    const again = await post(apiKey, body, 'key-1');
    const other = await post(apiKey, { message: 'book a table for ten' }, 'key-1');

    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    const answer = ChatResponse.parse(await first.json());
    expect(ChatResponse.parse(await again.json())).toEqual(answer);
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ error: { code: 'idempotency_key_reused' } });
    const messages = await listMessages(apiKey, answer.conversationId);
    expect(messages.map((message) => message.content)).toEqual([
      'book a table for two',
      'fake reply to: book a table for two',
    ]);
    // The same key is another user's own.
    const { apiKey: otherUser } = await fixture.createUser('also-retrying');
    const theirs = await post(otherUser, { message: 'book a table for ten' }, 'key-1');
    expect(theirs.status).toBe(200);
    expect(ChatResponse.parse(await theirs.json()).turnId).not.toBe(answer.turnId);
  });
});
