import type { MemoryKind } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// A kind of item memory search can find: its own full-text search and how to load its items.
// Vector search is shared (memory.embeddings holds every kind).
export type SearchSource = {
  // `terms` are lexemes (memory.terms), matched as they are.
  searchText(db: Queryable, filter: TextFilter, terms: string[], limit: number): Promise<string[]>;
  load(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]>;
  // For kinds that keep track of use: the items a search returned.
  markReturned?(db: Queryable, userId: string, ids: string[]): Promise<void>;
};

export type TextFilter = {
  userId: string;
  conversationId: string | undefined;
  from: Date | undefined;
  to: Date | undefined;
};

// Postgres ranks every item that matches any word of the full-text query, so its cost grows
// with the matches, and two common words match a large share of a big memory. So it gets the
// rarest words (they say the most) while their items add up to at most this; the common ones
// are left to the vector ranker. A larger budget finds no more on LoCoMo, only slower.
export const TEXT_MATCH_BUDGET = 1_000;

// The terms as one OR query for full-text search, from the query's parameter `param` (a text
// array). Each goes in quoted, its backslashes and quotes escaped: no term reads as tsquery
// syntax, and none is stemmed a second time, since it is a lexeme already.
export function termsQuery(param: string): string {
  const quoted = `'''' || replace(replace(term, '\\', '\\\\'), '''', '''''') || ''''`;
  return `(SELECT string_agg(${quoted}, ' | ')::tsquery FROM unnest(${param}::text[]) AS term)`;
}

// Matches full-text ranking looks at, at most. The terms come chosen so that their matches add
// up to TEXT_MATCH_BUDGET by the term statistics (search-service.ts), but those count a message
// only once it is indexed, and a turn's recall does not wait for that: the cap holds whatever
// the counts leave out. Past it, the ranking is of the first matches found.
const MESSAGE_TEXT_MATCHES_MAX = 5_000;

// Full-text matches of any of the terms, best Postgres rank first.
async function searchMessageText(
  db: Queryable,
  filter: TextFilter,
  terms: string[],
  limit: number,
): Promise<string[]> {
  if (terms.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `WITH q AS (SELECT ${termsQuery('$2')} AS q)
     SELECT m.id FROM (
       SELECT id, search, seq FROM memory.messages
       WHERE user_id = $1 AND search @@ (SELECT q FROM q) AND forgotten_at IS NULL
         AND ($3::uuid IS NULL OR conversation_id = $3)
         AND ($4::timestamptz IS NULL OR created_at >= $4)
         AND ($5::timestamptz IS NULL OR created_at < $5)
       LIMIT $7
     ) m, q
     ORDER BY ts_rank_cd(m.search, q.q) DESC, m.seq DESC
     LIMIT $6`,
    [
      filter.userId,
      terms,
      filter.conversationId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      limit,
      MESSAGE_TEXT_MATCHES_MAX,
    ],
  );
  return rows.map((row) => row.id);
}

export const DEFAULT_IMPORTANCE = 5;

export type ItemDetails = {
  kind: MemoryKind;
  id: string;
  text: string;
  metadata: Record<string, unknown>;
  createdAt: Date;
  conversationId: string | null;
  // Position within its conversation, to tell adjacent messages apart.
  position: number | null;
  // 1-10 for kinds that have one (facts); others count as 5.
  importance: number;
};

async function loadMessages(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    content: string;
    metadata: Record<string, unknown>;
    created_at: Date;
    conversation_id: string;
    seq: string;
  }>(
    `SELECT id, content, metadata, created_at, conversation_id, seq FROM memory.messages
     WHERE user_id = $1 AND id = ANY($2::uuid[]) AND forgotten_at IS NULL`,
    [userId, ids],
  );
  return rows.map((row) => ({
    kind: 'message',
    id: row.id,
    text: row.content,
    metadata: row.metadata,
    createdAt: row.created_at,
    conversationId: row.conversation_id,
    position: Number(row.seq),
    importance: DEFAULT_IMPORTANCE,
  }));
}

export const messageSource: SearchSource = { searchText: searchMessageText, load: loadMessages };

// The messages just before and just after each given message in its conversation, with the
// given message's id (`of`), within the filter's dates: an answer often sits one turn from the
// words the question shares.
export async function loadAdjacentMessages(
  db: Queryable,
  filter: TextFilter,
  ids: string[],
): Promise<(ItemDetails & { of: string })[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    of: string;
    id: string;
    content: string;
    metadata: Record<string, unknown>;
    created_at: Date;
    conversation_id: string;
    seq: string;
  }>(
    `SELECT m.id AS of, n.id, n.content, n.metadata, n.created_at, n.conversation_id, n.seq
     FROM memory.messages m, LATERAL (
       (SELECT p.id, p.content, p.metadata, p.created_at, p.conversation_id, p.seq
        FROM memory.messages p
        WHERE p.conversation_id = m.conversation_id AND p.seq < m.seq AND p.forgotten_at IS NULL
        ORDER BY p.seq DESC LIMIT 1)
       UNION ALL
       (SELECT s.id, s.content, s.metadata, s.created_at, s.conversation_id, s.seq
        FROM memory.messages s
        WHERE s.conversation_id = m.conversation_id AND s.seq > m.seq AND s.forgotten_at IS NULL
        ORDER BY s.seq LIMIT 1)
     ) n
     WHERE m.user_id = $1 AND m.id = ANY($2::uuid[])
       AND ($3::timestamptz IS NULL OR n.created_at >= $3)
       AND ($4::timestamptz IS NULL OR n.created_at < $4)`,
    [filter.userId, ids, filter.from ?? null, filter.to ?? null],
  );
  return rows.map((row) => ({
    of: row.of,
    kind: 'message',
    id: row.id,
    text: row.content,
    metadata: row.metadata,
    createdAt: row.created_at,
    conversationId: row.conversation_id,
    position: Number(row.seq),
    importance: DEFAULT_IMPORTANCE,
  }));
}
