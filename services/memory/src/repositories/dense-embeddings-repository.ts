import { createHash } from 'node:crypto';
import type { MemoryKind } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import { LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { VectorCandidate, VectorFilter } from './embeddings-repository';

// Dense vectors of an embed model, beside the built-in embedder's sparse ones in
// memory.embeddings. Every item has a sparse row; the background embedder walks those rows in
// the order they were written and gives each item a dense row of the current model.

export type DenseModel = { model: string; dimensions: number };

export type PendingItem = {
  kind: MemoryKind;
  itemId: string;
  userId: string;
  conversationId: string | null;
  itemCreatedAt: Date;
  // The cursor: the sparse row's write time, then the item id.
  indexedAt: Date;
};

export type Cursor = { indexedAt: Date; itemId: string };

// pgvector's text form of a dense vector.
function toVectorText(vector: number[]): string {
  return `[${vector.join(',')}]`;
}

// The HNSW index of one model: partial, so each model's vectors (of one size) have their own.
// The model name is a `provider/model` reference from model-gateway; it is quoted as a literal.
export async function ensureDenseIndex(db: Queryable, dense: DenseModel): Promise<void> {
  const name = `embeddings_dense_${createHash('md5').update(dense.model).digest('hex').slice(0, 16)}`;
  const literal = `'${dense.model.replaceAll("'", "''")}'`;
  await db.query(
    `CREATE INDEX IF NOT EXISTS ${name} ON memory.embeddings
     USING hnsw ((dense::vector(${dense.dimensions})) vector_cosine_ops)
     WHERE model = ${literal}`,
  );
}

// Items after the cursor that have no vector of this model yet.
export async function findPendingItems(
  db: Queryable,
  model: string,
  after: Cursor | undefined,
  limit: number,
): Promise<PendingItem[]> {
  const { rows } = await db.query<{
    item_kind: MemoryKind;
    item_id: string;
    user_id: string;
    conversation_id: string | null;
    item_created_at: Date;
    created_at: Date;
  }>(
    `SELECT e.item_kind, e.item_id, e.user_id, e.conversation_id, e.item_created_at, e.created_at
     FROM memory.embeddings e
     WHERE e.model = $1
       AND ($3::timestamptz IS NULL OR (e.created_at, e.item_id) > ($3, $4::uuid))
       AND NOT EXISTS (
         SELECT 1 FROM memory.embeddings d
         WHERE d.item_id = e.item_id AND d.item_kind = e.item_kind AND d.model = $2)
     ORDER BY e.created_at, e.item_id
     LIMIT $5`,
    [LOCAL_EMBEDDING_MODEL, model, after?.indexedAt ?? null, after?.itemId ?? null, limit],
  );
  return rows.map((row) => ({
    kind: row.item_kind,
    itemId: row.item_id,
    userId: row.user_id,
    conversationId: row.conversation_id,
    itemCreatedAt: row.item_created_at,
    indexedAt: row.created_at,
  }));
}

export async function insertDenseEmbeddings(
  db: Queryable,
  model: string,
  rows: { item: PendingItem; vector: number[] }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO memory.embeddings
       (item_kind, item_id, model, user_id, conversation_id, item_created_at, dense)
     SELECT kind, item_id, $1, user_id, conversation_id, item_created_at, dense::vector
     FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::uuid[], $6::timestamptz[], $7::text[])
       AS t(kind, item_id, user_id, conversation_id, item_created_at, dense)
     ON CONFLICT (item_kind, item_id, model) DO UPDATE SET dense = excluded.dense`,
    [
      model,
      rows.map((row) => row.item.kind),
      rows.map((row) => row.item.itemId),
      rows.map((row) => row.item.userId),
      rows.map((row) => row.item.conversationId),
      rows.map((row) => row.item.itemCreatedAt),
      rows.map((row) => toVectorText(row.vector)),
    ],
  );
}

// A rewritten item's dense vectors describe its old text: dropped, they are made again.
export async function deleteDenseEmbeddings(
  db: Queryable,
  kind: MemoryKind,
  itemId: string,
): Promise<void> {
  await db.query(
    `DELETE FROM memory.embeddings
     WHERE item_kind = $1 AND item_id = $2 AND model <> $3`,
    [kind, itemId, LOCAL_EMBEDDING_MODEL],
  );
}

// Nearest items of one dense model by cosine distance (its HNSW index), nearest first.
export async function findNearestDense(
  db: Queryable,
  filter: Omit<VectorFilter, 'model'>,
  dense: DenseModel,
  query: number[],
  limit: number,
): Promise<(VectorCandidate & { similarity: number })[]> {
  const type = `vector(${Math.trunc(dense.dimensions)})`;
  const { rows } = await db.query<{ item_kind: MemoryKind; item_id: string; distance: number }>(
    `SELECT item_kind, item_id, dense::${type} <=> $7::${type} AS distance
     FROM memory.embeddings
     WHERE model = $1 AND user_id = $2 AND item_kind = ANY($3::text[])
       AND ($4::uuid IS NULL OR conversation_id = $4)
       AND ($5::timestamptz IS NULL OR item_created_at >= $5)
       AND ($6::timestamptz IS NULL OR item_created_at < $6)
     ORDER BY distance
     LIMIT $8`,
    [
      dense.model,
      filter.userId,
      filter.kinds,
      filter.conversationId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      toVectorText(query),
      limit,
    ],
  );
  return rows.map((row) => ({
    kind: row.item_kind,
    itemId: row.item_id,
    similarity: 1 - Number(row.distance),
  }));
}
