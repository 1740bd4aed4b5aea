import type { MemoryKind } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// A kind of item memory search can find: its own full-text search and how to load its items.
// Vector search is shared (memory.embeddings holds every kind).
export type SearchSource = {
  searchText(db: Queryable, filter: TextFilter, words: string[], limit: number): Promise<string[]>;
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

// Matches full-text ranking looks at, at most. The words come chosen so that their matches add
// up to a few thousand (search-service.ts), but by the term statistics, and Postgres splits and
// stems words its own way; ranking 25,000 matches took 200-300 ms at 100,000 messages. Past the
// cap, the ranking is of the first matches found.
const MESSAGE_TEXT_MATCHES_MAX = 5_000;

// Full-text matches of any of the query's words, best Postgres rank first.
async function searchMessageText(
  db: Queryable,
  filter: TextFilter,
  words: string[],
  limit: number,
): Promise<string[]> {
  if (words.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.id FROM (
       SELECT id, search, seq FROM memory.messages
       WHERE user_id = $1 AND search @@ to_tsquery('english', $2) AND forgotten_at IS NULL
         AND ($3::uuid IS NULL OR conversation_id = $3)
         AND ($4::timestamptz IS NULL OR created_at >= $4)
         AND ($5::timestamptz IS NULL OR created_at < $5)
       LIMIT $7
     ) m, to_tsquery('english', $2) q
     ORDER BY ts_rank_cd(m.search, q) DESC, m.seq DESC
     LIMIT $6`,
    [
      filter.userId,
      words.join(' | '),
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
