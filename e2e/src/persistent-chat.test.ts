import { ChatResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('one persistent conversation across a full restart', () => {
  let fixture: StackFixture;

  beforeAll(async () => {
    fixture = await startStackFixture();
    // Answers from what the conversation history holds, as a model would.
    fixture.fake.onChat((request) => {
      const said = sentMessages(request).find(
        (message) => message.role === 'user' && /favourite colour is (\w+)/.test(message.content),
      );
      const colour = said?.content.match(/favourite colour is (\w+)/)?.[1];
      return { content: colour ? `Your favourite colour is ${colour}.` : 'Noted.' };
    });
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('remembers what it was told after all six services and the database restart', async () => {
    const { apiKey } = await fixture.createUser('alice');

    const first = await fixture.chat(apiKey, { message: 'my favourite colour is purple' });
    expect(first.status).toBe(200);
    const firstBody = ChatResponse.parse(await first.json());

    await fixture.stack.stop();
    await fixture.stack.start();
    fixture.fake.requests.length = 0;

    const second = await fixture.chat(apiKey, { message: 'what is my favourite colour?' });
    expect(second.status).toBe(200);
    const secondBody = ChatResponse.parse(await second.json());

    // No conversation id was sent either time: both landed in the user's single conversation.
    expect(secondBody.conversationId).toBe(firstBody.conversationId);
    expect(secondBody.reply.content).toBe('Your favourite colour is purple.');
    const sent = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1));
    expect(sent).toContainEqual({ role: 'user', content: 'my favourite colour is purple' });
    expect(sent).toContainEqual({ role: 'assistant', content: firstBody.reply.content });
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'what is my favourite colour?' });
    expect(secondBody.usage.inputTokens).toBeGreaterThan(0);
  });

  it('keeps users apart: another user starts a conversation of their own', async () => {
    const alice = await fixture.createUser('alice-2');
    const bob = await fixture.createUser('bob');
    const aliceReply = ChatResponse.parse(
      await (await fixture.chat(alice.apiKey, { message: 'my favourite colour is green' })).json(),
    );
    const bobReply = ChatResponse.parse(
      await (await fixture.chat(bob.apiKey, { message: 'what is my favourite colour?' })).json(),
    );
    expect(bobReply.conversationId).not.toBe(aliceReply.conversationId);
    expect(bobReply.reply.content).toBe('Noted.');

    // Bob cannot post into Alice's conversation by naming its id.
    const intrusion = await fixture.chat(bob.apiKey, {
      message: 'hello',
      conversationId: aliceReply.conversationId,
    });
    expect(intrusion.status).toBe(404);
    expect(await intrusion.json()).toEqual({
      error: { code: 'not_found', message: 'conversation not found' },
    });
  });

  it("tells the model the date and time in the user's time zone", async () => {
    const { apiKey } = await fixture.createUser('kenji');

    const response = await fixture.chat(apiKey, {
      message: 'what day is it?',
      timeZone: 'Asia/Tokyo',
    });

    expect(response.status).toBe(200);
    const system = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1))[0];
    expect(system?.content).toMatch(/Current date and time: .* \(Asia\/Tokyo, GMT\+09:00\)\./);
  });
});
