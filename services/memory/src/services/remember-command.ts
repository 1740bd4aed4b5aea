import { FACT_CONTENT_MAX_CHARS, type Fact, type StoredMessage } from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { insertExtraction } from '../repositories/extractions-repository';
import { listMessagesBefore } from '../repositories/messages-repository';
import { operationOfStored } from './extractions-service';
import { storeFact } from './facts-service';

// What a "remember" message asks to store: its own words (inline or quoted), or the message it
// points to ("remember this", "save that", "keep this in mind", "note that").
type RememberRequest = { type: 'text'; text: string } | { type: 'referent' };

// Said at the start of a user message: "remember", "save", "note", "keep in mind", and "keep
// this in mind" with its deictic inside.
const COMMAND_START =
  /^\s*(?:please\s+)?(?:(remember|save|note|keep\s+in\s+mind)\b|keep\s+(?:this|that|it)\s+in\s+mind\b)[\s,]*/i;
// A referent with nothing else to store: "this", "that", "the above", "what I said", and filler.
const REFERENT_ONLY =
  /^(?:this|that|it|these|the above|the following|what i (?:just )?said)?(?:[\s,]*\b(?:down|in mind|for me|for later|for next time|please|too|as well)\b)*[\s.!:,-]*$/i;
// "save this" and "note this" also have to name a referent: "save" alone is a command to the agent.
const NAMES_REFERENT = /\b(?:this|that|it|these|the above|what i (?:just )?said)\b/i;
// Text in double quotes, straight or curly, or Markdown quote lines.
const QUOTED = /"([^"]{3,})"|“([^”]{3,})”|((?:^|\n)>[^\n]*(?:\n>[^\n]*)*)/;
// Between the verb and the words to store: "that", "this:", ":" (for "save" and "note" required).
const CONNECTOR = /^(?:(?:that|this|the following)\s*[:,-]\s*|that\s+|[:,-]\s*)/i;
// Explicit requests outrank what extraction would infer on its own.
const REMEMBERED_IMPORTANCE = 7;
// A referent longer than this is condensed by the utility model during the turn's extraction.
export const LONG_REFERENT_CHARS = 300;

// What the user asked to be remembered, or undefined when the message asks for nothing. A
// question ("remember when we met?") asks the assistant to recall, not to store.
export function parseRememberRequest(content: string): RememberRequest | undefined {
  if (content.trim().endsWith('?')) return undefined;
  const start = COMMAND_START.exec(content);
  if (!start) return undefined;
  const verb = start[1]?.toLowerCase().replace(/\s+/g, ' ');
  const rest = content.slice(start[0].length).trim();
  const quoted = findQuoted(rest);
  if (quoted && REFERENT_ONLY.test(rest.replace(quoted.raw, ''))) return asText(quoted.text);
  if (REFERENT_ONLY.test(rest)) {
    return verb === undefined || NAMES_REFERENT.test(rest) ? { type: 'referent' } : undefined;
  }
  return parseInline(verb ?? 'keep in mind', rest);
}

// The words a "remember that …" stores as they are, or undefined: extraction counts them as known.
export function parseRememberCommand(content: string): string | undefined {
  const request = parseRememberRequest(content);
  return request?.type === 'text' ? request.text : undefined;
}

// Stores the fact before the turn runs, so it is known at once rather than after extraction,
// and records it as the message's extraction, so the Learned view shows it and can undo it.
export async function rememberIfAsked(
  pool: Pool,
  userId: string,
  message: StoredMessage,
): Promise<Fact | undefined> {
  if (message.role !== 'user') return undefined;
  const request = parseRememberRequest(message.content);
  if (!request) return undefined;
  const referent =
    request.type === 'referent' ? await findReferent(pool, userId, message) : undefined;
  const content = request.type === 'text' ? request.text : referent && clip(referent.content);
  if (!content) return undefined;
  return withTransaction(pool, async (db) => {
    const stored = await storeFact(db, userId, {
      content,
      category: 'fact',
      tags: [],
      importance: REMEMBERED_IMPORTANCE,
      sourceMessageIds: referent ? [message.id, referent.id] : [message.id],
    });
    await insertExtraction(db, {
      runId: message.id,
      userId,
      turnId: null,
      status: 'done',
      operations: [
        {
          ...operationOfStored(stored),
          ...(referent ? { referentMessageId: referent.id } : {}),
        },
      ],
      reason: null,
    });
    return stored.fact;
  });
}

// What "remember this" points to: the message just before it. When that is the assistant's
// reply to a statement of the user's, the reply counts only if it says clearly more (twice as
// long): "Noted, I'll keep that in mind" is not what the user wants kept, a recipe they asked
// for is. A question of the user's is never the thing to keep.
async function findReferent(
  pool: Pool,
  userId: string,
  message: StoredMessage,
): Promise<StoredMessage | undefined> {
  const [last, before] = await listMessagesBefore(pool, userId, message, 2);
  if (last?.role !== 'assistant' || before?.role !== 'user') return last;
  const isStatement = !before.content.trim().endsWith('?') && !parseRememberRequest(before.content);
  return isStatement && last.content.length < 2 * before.content.length ? before : last;
}

function parseInline(verb: string, rest: string): RememberRequest | undefined {
  const connector = CONNECTOR.exec(rest)?.[0];
  // "save the file" and "note the time" are tasks for the agent, not facts to keep.
  if (!connector && (verb === 'save' || verb === 'note')) return undefined;
  const text = rest.slice(connector?.length ?? 0).trim();
  if ((verb === 'save' || verb === 'note') && !/\s/.test(text)) return undefined;
  return asText(text);
}

function asText(text: string): RememberRequest | undefined {
  const trimmed = text.trim();
  if (trimmed.length < 3 || trimmed.length > FACT_CONTENT_MAX_CHARS) return undefined;
  return { type: 'text', text: trimmed };
}

function findQuoted(text: string): { raw: string; text: string } | undefined {
  const match = QUOTED.exec(text);
  if (!match) return undefined;
  const [raw, straight, curly, lines] = match;
  const quoted = straight ?? curly ?? lines?.replace(/(^|\n)>\s?/g, '$1') ?? '';
  return { raw, text: quoted.trim() };
}

// The whole referent stays in the conversation; the fact keeps what fits until it is condensed.
function clip(text: string): string {
  return text.length <= FACT_CONTENT_MAX_CHARS ? text : text.slice(0, FACT_CONTENT_MAX_CHARS);
}
