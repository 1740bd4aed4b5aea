import { randomUUID } from 'node:crypto';
import type { Fact, FactCategory } from '@jarvis/contracts';
import type { PoolClient, Queryable } from '@jarvis/db';
import {
  type ItemDetails,
  type SearchSource,
  type TextFilter,
  termsQuery,
} from './search-repository';

export type FactFields = {
  category: FactCategory;
  content: string;
  tags: string[];
  importance: number;
  sourceMessageIds: string[];
  // When the fact stops holding; open-ended when absent.
  validTo?: Date;
};

// A fact is current until its end, which may lie ahead ("until Friday"): past it, it has left
// recall, search and listings, and is kept as history. Every "current fact" filter is this one.
export function isOpenFact(alias?: string): string {
  const column = alias ? `${alias}.valid_to` : 'valid_to';
  return `(${column} IS NULL OR ${column} > now())`;
}

export type FactListFilter = {
  userId: string;
  category: FactCategory | undefined;
  tag: string | undefined;
  includeInvalid: boolean;
  before: Date | undefined;
};

type FactRow = {
  id: string;
  category: FactCategory;
  content: string;
  tags: string[];
  importance: number;
  source_message_ids: string[];
  valid_from: Date;
  valid_to: Date | null;
  superseded_by: string | null;
  created_at: Date;
  updated_at: Date;
};

// node-postgres has no parser for uuid[]: as text[] it arrives as an array.
const FACT_COLUMNS = `id, category, content, tags, importance,
  source_message_ids::text[] AS source_message_ids, valid_from, valid_to, superseded_by,
  created_at, updated_at`;

function toFact(row: FactRow): Fact {
  return {
    id: row.id,
    category: row.category,
    content: row.content,
    tags: row.tags,
    importance: row.importance,
    sourceMessageIds: row.source_message_ids,
    validFrom: row.valid_from.toISOString(),
    validTo: row.valid_to?.toISOString() ?? null,
    supersededBy: row.superseded_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export async function insertFact(
  db: PoolClient,
  userId: string,
  fields: FactFields,
): Promise<Fact> {
  const { rows } = await db.query<FactRow>(
    `INSERT INTO memory.facts
       (id, user_id, category, content, tags, importance, source_message_ids, valid_to)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING ${FACT_COLUMNS}`,
    [
      randomUUID(),
      userId,
      fields.category,
      fields.content,
      fields.tags,
      fields.importance,
      fields.sourceMessageIds,
      fields.validTo ?? null,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('fact insert returned no row');
  return toFact(row);
}

export async function findFact(
  db: Queryable,
  userId: string,
  id: string,
): Promise<Fact | undefined> {
  const { rows } = await db.query<FactRow>(
    `SELECT ${FACT_COLUMNS} FROM memory.facts WHERE user_id = $1 AND id = $2`,
    [userId, id],
  );
  const row = rows[0];
  return row ? toFact(row) : undefined;
}

// Holds the row until the transaction ends, so concurrent changes to one fact take turns and
// the second sees the first's outcome.
export async function lockFact(
  db: PoolClient,
  userId: string,
  id: string,
): Promise<Fact | undefined> {
  const { rows } = await db.query<FactRow>(
    `SELECT ${FACT_COLUMNS} FROM memory.facts WHERE user_id = $1 AND id = $2 FOR UPDATE`,
    [userId, id],
  );
  const row = rows[0];
  return row ? toFact(row) : undefined;
}

// Ends a fact's validity now, naming its successor when it has one (an end ahead is brought
// forward).
export async function closeFact(
  db: PoolClient,
  userId: string,
  id: string,
  supersededBy: string | null,
): Promise<Fact> {
  const { rows } = await db.query<FactRow>(
    `UPDATE memory.facts SET valid_to = now(), superseded_by = $3, updated_at = now()
     WHERE user_id = $1 AND id = $2
     RETURNING ${FACT_COLUMNS}`,
    [userId, id, supersededBy],
  );
  const row = rows[0];
  if (!row) throw new Error('locked fact vanished before it was closed');
  return toFact(row);
}

// Serialises the storing of one user's facts, until the transaction ends: the remember command,
// the remember tool and extraction can store the same fact at once, and each must see the
// other's row before deciding it is new.
export async function lockUserFacts(db: PoolClient, userId: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('memory.facts'), hashtext($1))`, [userId]);
}

// The open facts of one tier (standing rules, or all other facts) most like a text: the same
// text ignoring case, or sharing its terms, best Postgres rank first.
export async function listFactsLike(
  db: Queryable,
  userId: string,
  like: { content: string; terms: string[]; isRule: boolean },
  limit: number,
): Promise<Fact[]> {
  const { rows } = await db.query<FactRow>(
    `SELECT ${FACT_COLUMNS} FROM memory.facts f, (SELECT ${termsQuery('$3')} AS q) query
     WHERE f.user_id = $1 AND ${isOpenFact('f')} AND (f.category = 'rule') = $4
       AND (lower(f.content) = lower($2) OR f.search @@ query.q)
     ORDER BY lower(f.content) = lower($2) DESC, ts_rank_cd(f.search, query.q) DESC NULLS LAST,
       f.created_at DESC
     LIMIT $5`,
    [userId, like.content, like.terms, like.isRule, limit],
  );
  return rows.map(toFact);
}

// A fact told again: it keeps the higher importance and the new provenance too. Only these two
// change in place; what the fact says never does.
export async function reinforceFact(
  db: PoolClient,
  userId: string,
  id: string,
  importance: number,
  sourceMessageIds: string[],
): Promise<Fact> {
  const { rows } = await db.query<FactRow>(
    `UPDATE memory.facts
     SET importance = greatest(importance, $3), source_message_ids = $4, updated_at = now()
     WHERE user_id = $1 AND id = $2
     RETURNING ${FACT_COLUMNS}`,
    [userId, id, importance, sourceMessageIds],
  );
  const row = rows[0];
  if (!row) throw new Error("fact vanished while its user's facts were locked");
  return toFact(row);
}

// Newest first; ties in created_at (facts stored in one transaction) in a fixed order.
export async function listMatchingFacts(
  db: Queryable,
  filter: FactListFilter,
  limit: number,
): Promise<Fact[]> {
  const { rows } = await db.query<FactRow>(
    `SELECT ${FACT_COLUMNS} FROM memory.facts
     WHERE user_id = $1
       AND ($2::boolean OR ${isOpenFact()})
       AND ($3::text IS NULL OR category = $3)
       AND ($4::text IS NULL OR tags @> ARRAY[$4::text])
       AND ($5::timestamptz IS NULL OR created_at < $5)
     ORDER BY created_at DESC, id DESC
     LIMIT $6`,
    [
      filter.userId,
      filter.includeInvalid,
      filter.category ?? null,
      filter.tag ?? null,
      filter.before ?? null,
      limit,
    ],
  );
  return rows.map(toFact);
}

// The versions a fact replaced, newest first: each one's successor is the one before it.
export async function listOlderVersions(
  db: Queryable,
  userId: string,
  id: string,
  limit: number,
): Promise<Fact[]> {
  const { rows } = await db.query<FactRow>(
    `WITH RECURSIVE chain AS (
       SELECT f.id, 1 AS depth FROM memory.facts f WHERE f.user_id = $1 AND f.superseded_by = $2
       UNION ALL
       SELECT f.id, chain.depth + 1 FROM memory.facts f JOIN chain ON f.superseded_by = chain.id
       WHERE f.user_id = $1 AND chain.depth < $3
     )
     SELECT ${FACT_COLUMNS} FROM memory.facts JOIN chain USING (id)
     ORDER BY chain.depth
     LIMIT $3`,
    [userId, id, limit],
  );
  return rows.map(toFact);
}

// How many of these messages exist and belong to the user.
export async function countOwnMessages(
  db: Queryable,
  userId: string,
  messageIds: string[],
): Promise<number> {
  if (messageIds.length === 0) return 0;
  const { rows } = await db.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM memory.messages WHERE user_id = $1 AND id = ANY($2::uuid[])',
    [userId, messageIds],
  );
  return rows[0]?.count ?? 0;
}

// An invalid fact must not be found by vector search any more.
export async function deleteFactEmbeddings(
  db: PoolClient,
  userId: string,
  factId: string,
): Promise<void> {
  await db.query(
    `DELETE FROM memory.embeddings WHERE item_kind = 'fact' AND item_id = $1 AND user_id = $2`,
    [factId, userId],
  );
}

// Full-text matches of any of the terms among valid facts, best Postgres rank first.
// Facts belong to no conversation, so a search within one finds none.
async function searchFactText(
  db: Queryable,
  filter: TextFilter,
  terms: string[],
  limit: number,
): Promise<string[]> {
  if (terms.length === 0 || filter.conversationId !== undefined) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT f.id FROM memory.facts f, (SELECT ${termsQuery('$2')} AS q) query
     WHERE f.user_id = $1 AND ${isOpenFact('f')} AND f.search @@ query.q
       AND ($3::timestamptz IS NULL OR f.created_at >= $3)
       AND ($4::timestamptz IS NULL OR f.created_at < $4)
     ORDER BY ts_rank_cd(f.search, query.q) DESC, f.created_at DESC
     LIMIT $5`,
    [filter.userId, terms, filter.from ?? null, filter.to ?? null, limit],
  );
  return rows.map((row) => row.id);
}

// Open facts only: a vector match can still name one invalidated since.
async function loadFacts(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    category: FactCategory;
    content: string;
    tags: string[];
    importance: number;
    created_at: Date;
  }>(
    `SELECT id, category, content, tags, importance, created_at FROM memory.facts
     WHERE user_id = $1 AND id = ANY($2::uuid[]) AND ${isOpenFact()}`,
    [userId, ids],
  );
  return rows.map((row) => ({
    kind: 'fact',
    id: row.id,
    text: row.content,
    metadata: { category: row.category, tags: row.tags, importance: row.importance },
    createdAt: row.created_at,
    conversationId: null,
    position: null,
    importance: row.importance,
  }));
}

// The facts a search returned count as accessed; the candidates it only weighed do not (a
// recall weighs about a hundred, and writing them all made every turn rewrite the user's facts).
// Rows another transaction holds are left untouched rather than waited for: a search must
// neither block on an update nor deadlock with a concurrent search.
async function markFactsReturned(db: Queryable, userId: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE memory.facts SET last_accessed_at = now()
     WHERE id IN (
       SELECT id FROM memory.facts
       WHERE user_id = $1 AND id = ANY($2::uuid[]) AND ${isOpenFact()}
       FOR UPDATE SKIP LOCKED
     )`,
    [userId, ids],
  );
}

export const factSource: SearchSource = {
  searchText: searchFactText,
  load: loadFacts,
  markReturned: markFactsReturned,
};
