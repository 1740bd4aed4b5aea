import { FACT_CONTENT_MAX_CHARS, type Fact, type StoredMessage } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { rememberFact } from './facts-service';

// "Remember that …", "please remember: …" — said at the start of a user message.
const REMEMBER_COMMAND = /^\s*(?:please\s+)?remember(?:\s+that)?[\s:,]+(.{3,})$/is;
// Explicit requests outrank what extraction would infer on its own.
const REMEMBERED_IMPORTANCE = 7;

// What the user asked to be remembered, or undefined when the message asks for nothing. A
// question ("remember when we met?") asks the assistant to recall, not to store.
export function parseRememberCommand(content: string): string | undefined {
  const text = REMEMBER_COMMAND.exec(content)?.[1]?.trim();
  if (!text || text.length < 3 || text.length > FACT_CONTENT_MAX_CHARS) return undefined;
  // The pattern's optional "that" lets a bare "remember that" capture the word itself.
  if (text.endsWith('?') || text.toLowerCase() === 'that') return undefined;
  return text;
}

// Stores the fact before the turn runs, so it is known at once rather than after extraction.
export async function rememberIfAsked(
  pool: Pool,
  userId: string,
  message: StoredMessage,
): Promise<Fact | undefined> {
  if (message.role !== 'user') return undefined;
  const content = parseRememberCommand(message.content);
  if (!content) return undefined;
  const { fact } = await rememberFact(pool, {
    userId,
    content,
    category: 'fact',
    tags: [],
    importance: REMEMBERED_IMPORTANCE,
    sourceMessageIds: [message.id],
  });
  return fact;
}
