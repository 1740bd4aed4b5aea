import type { RecalledSummary } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import {
  DEFAULT_IMPORTANCE,
  type ItemDetails,
  type SearchSource,
  type TextFilter,
  termsQuery,
} from './search-repository';

export type TailMessage = { seq: number; role: string; content: string; createdAt: Date };

// Messages after the last summary, oldest first.
export async function listUnsummarisedTail(
  db: Queryable,
  userId: string,
  conversationId: string,
): Promise<TailMessage[]> {
  const { rows } = await db.query<{ seq: string; role: string; content: string; created_at: Date }>(
    `SELECT seq, role, content, created_at FROM memory.messages
     WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
       AND seq > coalesce((SELECT max(to_seq) FROM memory.summaries WHERE conversation_id = $1), 0)
     ORDER BY seq`,
    [conversationId, userId],
  );
  return rows.map((row) => ({
    seq: Number(row.seq),
    role: row.role,
    content: row.content,
    createdAt: row.created_at,
  }));
}

// Size of the tail without reading it: estimated tokens (a quarter of the characters, as
// estimateTokens) and where it starts.
export async function measureUnsummarisedTail(
  db: Queryable,
  userId: string,
  conversationId: string,
): Promise<{ tokens: number; firstSeq: number | undefined }> {
  const { rows } = await db.query<{ tokens: string | null; first_seq: string | null }>(
    `SELECT sum(ceil(length(content) / 4.0)) AS tokens, min(seq) AS first_seq
     FROM memory.messages
     WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
       AND seq > coalesce((SELECT max(to_seq) FROM memory.summaries WHERE conversation_id = $1), 0)`,
    [conversationId, userId],
  );
  const row = rows[0];
  return {
    tokens: Number(row?.tokens ?? 0),
    firstSeq: row?.first_seq == null ? undefined : Number(row.first_seq),
  };
}

export async function findLatestSummary(
  db: Queryable,
  conversationId: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ content: string }>(
    'SELECT content FROM memory.summaries WHERE conversation_id = $1 ORDER BY to_seq DESC LIMIT 1',
    [conversationId],
  );
  return rows[0]?.content;
}

export type NewSummary = {
  id: string;
  userId: string;
  conversationId: string;
  fromSeq: number;
  toSeq: number;
  fromAt: Date;
  toAt: Date;
  content: string;
};

// False when that stretch was summarised already (a redelivered job).
export async function insertSummary(db: Queryable, summary: NewSummary): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO memory.summaries
       (id, user_id, conversation_id, from_seq, to_seq, from_at, to_at, content)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (conversation_id, from_seq) DO NOTHING`,
    [
      summary.id,
      summary.userId,
      summary.conversationId,
      summary.fromSeq,
      summary.toSeq,
      summary.fromAt,
      summary.toAt,
      summary.content,
    ],
  );
  return rowCount === 1;
}

// Newest first.
export async function listSummaries(
  db: Queryable,
  userId: string,
  conversationId: string,
  limit: number,
): Promise<RecalledSummary[]> {
  const { rows } = await db.query<{ id: string; content: string; from_at: Date; to_at: Date }>(
    `SELECT id, content, from_at, to_at FROM memory.summaries
     WHERE conversation_id = $1 AND user_id = $2 ORDER BY to_seq DESC LIMIT $3`,
    [conversationId, userId, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    content: row.content,
    fromAt: row.from_at.toISOString(),
    toAt: row.to_at.toISOString(),
  }));
}

async function searchSummaryText(
  db: Queryable,
  filter: TextFilter,
  terms: string[],
  limit: number,
): Promise<string[]> {
  if (terms.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT s.id FROM memory.summaries s, (SELECT ${termsQuery('$2')} AS q) query
     WHERE s.user_id = $1 AND s.search @@ query.q
       AND ($3::uuid IS NULL OR s.conversation_id = $3)
       AND ($4::timestamptz IS NULL OR s.to_at >= $4)
       AND ($5::timestamptz IS NULL OR s.from_at < $5)
     ORDER BY ts_rank_cd(s.search, query.q) DESC LIMIT $6`,
    [
      filter.userId,
      terms,
      filter.conversationId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      limit,
    ],
  );
  return rows.map((row) => row.id);
}

async function loadSummaries(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    content: string;
    conversation_id: string;
    from_at: Date;
    to_at: Date;
    from_seq: string;
    to_seq: string;
  }>(
    `SELECT id, content, conversation_id, from_at, to_at, from_seq, to_seq FROM memory.summaries
     WHERE user_id = $1 AND id = ANY($2::uuid[])`,
    [userId, ids],
  );
  return rows.map((row) => ({
    kind: 'summary',
    id: row.id,
    text: row.content,
    metadata: {
      fromAt: row.from_at.toISOString(),
      toAt: row.to_at.toISOString(),
      fromSeq: Number(row.from_seq),
      toSeq: Number(row.to_seq),
    },
    createdAt: row.to_at,
    conversationId: row.conversation_id,
    position: null,
    importance: DEFAULT_IMPORTANCE,
  }));
}

export const summarySource: SearchSource = { searchText: searchSummaryText, load: loadSummaries };
