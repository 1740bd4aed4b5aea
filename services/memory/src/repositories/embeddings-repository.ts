import type { MemoryKind } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import { LOCAL_EMBEDDING_DIMENSIONS, type SparseVector } from '@jarvis/embeddings';

export type EmbeddingRow = {
  kind: MemoryKind;
  itemId: string;
  userId: string;
  conversationId: string | null;
  itemCreatedAt: Date;
  vector: SparseVector;
};

// pgvector's text form: 1-based indices, `{i:v,...}/dimensions`.
function toSparsevecText(vector: SparseVector): string {
  const pairs = vector.indices.map((index, k) => `${index + 1}:${vector.values[k] ?? 0}`);
  return `{${pairs.join(',')}}/${LOCAL_EMBEDDING_DIMENSIONS}`;
}

function fromSparsevecText(text: string): SparseVector {
  const body = text.slice(text.indexOf('{') + 1, text.indexOf('}'));
  const indices: number[] = [];
  const values: number[] = [];
  if (body.length > 0) {
    for (const pair of body.split(',')) {
      const [index, value] = pair.split(':');
      indices.push(Number(index) - 1);
      values.push(Number(value));
    }
  }
  return { indices, values };
}

export async function upsertLocalEmbeddings(
  db: Queryable,
  model: string,
  rows: EmbeddingRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO memory.embeddings
       (item_kind, item_id, model, user_id, conversation_id, item_created_at, sparse)
     SELECT kind, item_id, $1, user_id, conversation_id, item_created_at, sparse::sparsevec
     FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::uuid[], $6::timestamptz[], $7::text[])
       AS t(kind, item_id, user_id, conversation_id, item_created_at, sparse)
     ON CONFLICT (item_kind, item_id, model) DO UPDATE
       SET sparse = excluded.sparse, created_at = now()`,
    [
      model,
      rows.map((row) => row.kind),
      rows.map((row) => row.itemId),
      rows.map((row) => row.userId),
      rows.map((row) => row.conversationId),
      rows.map((row) => row.itemCreatedAt),
      rows.map((row) => toSparsevecText(row.vector)),
    ],
  );
}

// Replaces sparse vectors in place, each only if its row is still the one written at
// `writtenAt`: a row written since (an indexer that embedded the item again) or deleted (the item
// forgotten) is left as it is. Item, owner, date and write time stay, so the dense indexer's walk
// by write time does not see the item as new.
export async function replaceSparseVectors(
  db: Queryable,
  model: string,
  rows: { kind: MemoryKind; itemId: string; writtenAt: string; vector: SparseVector }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `UPDATE memory.embeddings e SET sparse = v.sparse::sparsevec
     FROM unnest($2::text[], $3::uuid[], $4::timestamptz[], $5::text[])
       AS v(kind, item_id, written_at, sparse)
     WHERE e.item_kind = v.kind AND e.item_id = v.item_id AND e.model = $1
       AND e.created_at = v.written_at`,
    [
      model,
      rows.map((row) => row.kind),
      rows.map((row) => row.itemId),
      rows.map((row) => row.writtenAt),
      rows.map((row) => toSparsevecText(row.vector)),
    ],
  );
}

export type VectorFilter = {
  userId: string;
  model: string;
  kinds: readonly MemoryKind[];
  conversationId: string | undefined;
  from: Date | undefined;
  to: Date | undefined;
};

export type VectorCandidate = { kind: MemoryKind; itemId: string };

// Nearest items by cosine distance (HNSW index), nearest first.
export async function findNearest(
  db: Queryable,
  filter: VectorFilter,
  query: SparseVector,
  limit: number,
): Promise<VectorCandidate[]> {
  const { rows } = await db.query<{ item_kind: MemoryKind; item_id: string }>(
    `SELECT item_kind, item_id FROM memory.embeddings
     WHERE model = $1 AND user_id = $2 AND item_kind = ANY($3::text[])
       AND ($4::uuid IS NULL OR conversation_id = $4)
       AND ($5::timestamptz IS NULL OR item_created_at >= $5)
       AND ($6::timestamptz IS NULL OR item_created_at < $6)
     ORDER BY sparse::sparsevec(${LOCAL_EMBEDDING_DIMENSIONS}) <=> $7::sparsevec(${LOCAL_EMBEDDING_DIMENSIONS})
     LIMIT $8`,
    [
      filter.model,
      filter.userId,
      filter.kinds,
      filter.conversationId ?? null,
      filter.from ?? null,
      filter.to ?? null,
      toSparsevecText(query),
      limit,
    ],
  );
  return rows.map((row) => ({ kind: row.item_kind, itemId: row.item_id }));
}

// Stored vectors by item id; items without one are left out.
export async function loadVectors(
  db: Queryable,
  userId: string,
  model: string,
  itemIds: string[],
): Promise<Map<string, SparseVector>> {
  if (itemIds.length === 0) return new Map();
  const { rows } = await db.query<{ item_id: string; sparse: string }>(
    `SELECT item_id, sparse::text AS sparse FROM memory.embeddings
     WHERE model = $1 AND user_id = $2 AND item_id = ANY($3::uuid[])`,
    [model, userId, itemIds],
  );
  return new Map(rows.map((row) => [row.item_id, fromSparsevecText(row.sparse)]));
}

// Inner products with the query, computed in Postgres so no vector crosses the wire.
export async function scoreItems(
  db: Queryable,
  userId: string,
  model: string,
  itemIds: string[],
  query: SparseVector,
): Promise<Map<string, number>> {
  if (itemIds.length === 0) return new Map();
  const { rows } = await db.query<{ item_id: string; score: number }>(
    `SELECT item_id, -(sparse::sparsevec(${LOCAL_EMBEDDING_DIMENSIONS}) <#> $4::sparsevec(${LOCAL_EMBEDDING_DIMENSIONS})) AS score
     FROM memory.embeddings
     WHERE model = $1 AND user_id = $2 AND item_id = ANY($3::uuid[])`,
    [model, userId, itemIds, toSparsevecText(query)],
  );
  return new Map(rows.map((row) => [row.item_id, row.score]));
}
