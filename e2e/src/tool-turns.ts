import { ChatResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type FakeReply,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  waitFor,
} from '@jarvis/testkit';
import { expect } from 'vitest';

// A chat turn in which the fake model calls the tools service's tools, as the tool tests
// script it: the model's replies by how many tool results it has seen, and what it was sent.

// Tool names offered to the model in an OpenAI-format request.
function offeredTools(request: FakeLlmRequest | undefined): string[] {
  const body = request?.body;
  if (typeof body !== 'object' || body === null || !('tools' in body)) return [];
  if (!Array.isArray(body.tools)) return [];
  return body.tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? '');
}

// Replies to turn requests by how many tool results the model has seen so far; background
// requests (fact extraction, summaries) get a plain answer.
export function onTurn(fixture: StackFixture, reply: (toolResults: number) => FakeReply): void {
  fixture.fake.onChat((request) => {
    if (!isTurnRequest(request)) return { content: '{"operations": []}' };
    const results = sentMessages(request).filter((message) => message.role === 'tool').length;
    return reply(results);
  });
}

function lastTurnRequest(fixture: StackFixture): FakeLlmRequest | undefined {
  return fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
}

// The tool results the model was sent in the last turn, in order.
export function toolResults(fixture: StackFixture): string[] {
  return sentMessages(lastTurnRequest(fixture))
    .filter((message) => message.role === 'tool')
    .map((message) => message.content ?? '');
}

export async function chat(fixture: StackFixture, key: string, message: string) {
  const response = await fixture.chat(key, { message });
  expect(response.status).toBe(200);
  return ChatResponse.parse(await response.json());
}

// The services start side by side: the orchestrator may have asked for the tools service's
// list before that was up, and picks it up on its next try. Chats until the model is offered
// every tool named.
export async function waitForToolsOffered(
  fixture: StackFixture,
  key: string,
  names: string[],
): Promise<void> {
  onTurn(fixture, () => ({ content: 'Here.' }));
  await waitFor(
    async () => {
      await chat(fixture, key, 'Are you there?');
      const offered = offeredTools(lastTurnRequest(fixture));
      return names.every((name) => offered.includes(name));
    },
    {
      timeoutMs: 30_000,
      intervalMs: 500,
      what: `${names.join(' and ')} to be offered to the model`,
    },
  );
}
