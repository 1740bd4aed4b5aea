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

// Postgres ranks every item that matches any word of the full-text query, so its cost grows
// with the matches, and two common words match a large share of a big memory. So it gets the
// rarest words (they say the most) while their items add up to at most this; the common ones
// are left to the vector ranker. A larger budget finds no more on LoCoMo, only slower.
export const TEXT_MATCH_BUDGET = 1_000;

// The words come chosen by the term statistics, but Postgres stems its own way: "supportive" is
// "supportiv" to the terms and "support" to Postgres, a far commoner lexeme. So a message search
// also leaves out the lexemes that Postgres' own statistics of the column (pg_stats, kept by
// ANALYZE) say are in more than TEXT_MATCH_BUDGET messages: one of them can multiply the messages
// a recall's full-text search ranks. The list is read at most once a minute per pool, in the
// background after the first read.
const COMMON_LEXEMES_TTL_MS = 60_000;
type CommonLexemes = { lexemes: string[]; readAt: number; reading?: Promise<void> };
const commonLexemesByPool = new WeakMap<Queryable, CommonLexemes>();

async function readCommonLexemes(db: Queryable): Promise<string[]> {
  // most_common_elem_freqs ends with three more numbers than there are elements (their
  // minimum, maximum and the share of empty values): their rows have no lexeme.
  const { rows } = await db.query<{ lexeme: string }>(
    `SELECT e.lexeme FROM pg_stats s,
       unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
     WHERE s.schemaname = 'memory' AND s.tablename = 'messages' AND s.attname = 'search'
       AND e.lexeme IS NOT NULL
       AND e.freq * (SELECT reltuples FROM pg_class WHERE oid = 'memory.messages'::regclass) > $1`,
    [TEXT_MATCH_BUDGET],
  );
  return rows.map((row) => row.lexeme);
}

function commonLexemesOf(db: Queryable): CommonLexemes {
  const known = commonLexemesByPool.get(db);
  if (known) return known;
  const created: CommonLexemes = { lexemes: [], readAt: 0 };
  commonLexemesByPool.set(db, created);
  return created;
}

async function commonMessageLexemes(db: Queryable): Promise<string[]> {
  const known = commonLexemesOf(db);
  if (!known.reading && Date.now() - known.readAt > COMMON_LEXEMES_TTL_MS) {
    known.reading = readCommonLexemes(db)
      .then((lexemes) => {
        known.lexemes = lexemes;
      })
      // A failed read keeps the list there was (none at first) until the next minute: the
      // search goes on, only less trimmed.
      .catch(() => {})
      .finally(() => {
        known.readAt = Date.now();
        known.reading = undefined;
      });
  }
  // A pool's first searches wait for the first read; later ones never wait.
  if (known.readAt === 0) await known.reading;
  return known.lexemes;
}

// Matches full-text ranking looks at, at most. The words come chosen so that their matches add
// up to TEXT_MATCH_BUDGET (search-service.ts), but by the term statistics, and Postgres splits
// and stems words its own way, so a word can still match a large share of a big memory, all of
// it ranked on the turn's path. Past the cap, the ranking is of the first matches found.
const MESSAGE_TEXT_MATCHES_MAX = 5_000;

// Full-text matches of any of the query's words, best Postgres rank first.
async function searchMessageText(
  db: Queryable,
  filter: TextFilter,
  words: string[],
  limit: number,
): Promise<string[]> {
  if (words.length === 0) return [];
  const common = await commonMessageLexemes(db);
  // The query's lexemes as Postgres stems them, less the common ones, as an OR query (none
  // left: no query, no match).
  const { rows } = await db.query<{ id: string }>(
    `WITH q AS (
       SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q
       FROM unnest(tsvector_to_array(to_tsvector('english', $2))) AS lexeme
       WHERE lexeme <> ALL($8::text[]))
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
      words.join(' '),
      filter.conversationId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      limit,
      MESSAGE_TEXT_MATCHES_MAX,
      common,
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
