import type { FakeLlmRequest } from './types';

// Reading what the fake LLM was sent. Besides chat turns, the stack sends background requests
// (summaries, fact extraction) to the same model, so tests pick the kind they mean.

export type SentMessage = { role: string; content: string };

export function sentMessages(request: FakeLlmRequest | undefined): SentMessage[] {
  const body = request?.body;
  if (typeof body !== 'object' || body === null || !('messages' in body)) return [];
  return Array.isArray(body.messages) ? body.messages : [];
}

// A turn's prompt starts with the persona.
export function isTurnRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request)[0]?.content.startsWith('You are Jarvis') ?? false;
}
