import { z } from 'zod';

export const Id = z.uuid();

export const MessageRole = z.enum(['user', 'assistant', 'system', 'tool']);
export type MessageRole = z.infer<typeof MessageRole>;

// The largest value of a Postgres `integer` column: a client's number past it (a file version, a
// chunk index) fails in the database as a 500 instead of a 400.
export const PG_INTEGER_MAX = 2_147_483_647;

// 32k characters is far above any real chat message and well below what the model can take.
export const MESSAGE_MAX_CHARS = 32_000;

const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

// An instant with its offset. Years 0001-9999 only, in the text and in UTC: Postgres refuses
// year 0000 as text (JavaScript takes it), and an instant past 9999 in UTC prints as "+010000-…",
// which no timestamp schema reads back. Every timestamp a client sends is one of these.
export const Timestamp = z.iso.datetime({ offset: true }).refine((text) => {
  const instant = Date.parse(text);
  return !text.startsWith('0000') && instant >= FIRST_INSTANT && instant <= LAST_INSTANT;
}, 'year must be 0001-9999');

export const StoredMessage = z.object({
  id: Id,
  conversationId: Id,
  role: MessageRole,
  content: z.string(),
  createdAt: Timestamp,
});
export type StoredMessage = z.infer<typeof StoredMessage>;

export const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

// An IANA time zone ("Europe/Oslo"), as this runtime knows them.
export const TimeZone = z
  .string()
  .max(64)
  .refine((name) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: name });
      return true;
    } catch {
      return false;
    }
  }, 'an IANA time zone, such as Europe/Oslo');
