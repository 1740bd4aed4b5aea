import type {
  DocumentChunk,
  DocumentContentType,
  DocumentEntry,
  DocumentInfo,
} from '@jarvis/contracts';
import type { PoolClient, Queryable } from '@jarvis/db';
import {
  DEFAULT_IMPORTANCE,
  type ItemDetails,
  type SearchSource,
  type TextFilter,
  termsQuery,
} from './search-repository';

export type NewDocument = {
  id: string;
  userId: string;
  title: string;
  contentType: DocumentContentType;
  source: string | null;
  metadata: Record<string, unknown>;
  sizeChars: number;
  chunkCount: number;
  // A PDF's; null for anything without pages.
  pageCount: number | null;
};

export type NewChunk = DocumentChunk & { id: string };

type DocumentRow = {
  id: string;
  title: string;
  content_type: DocumentContentType;
  source: string | null;
  metadata: Record<string, unknown>;
  size_chars: number;
  chunk_count: number;
  page_count: number | null;
  created_at: Date;
};

const ENTRY_COLUMNS =
  'id, title, content_type, source, size_chars, chunk_count, page_count, created_at';
const INFO_COLUMNS = `${ENTRY_COLUMNS}, metadata`;

function toEntry(row: Omit<DocumentRow, 'metadata'>): DocumentEntry {
  return {
    id: row.id,
    title: row.title,
    contentType: row.content_type,
    source: row.source,
    sizeChars: row.size_chars,
    chunkCount: row.chunk_count,
    ...(row.page_count === null ? {} : { pages: row.page_count }),
    createdAt: row.created_at.toISOString(),
  };
}

function toInfo(row: DocumentRow): DocumentInfo {
  return {
    ...toEntry(row),
    mediaType: row.content_type,
    chunks: row.chunk_count,
    metadata: row.metadata,
  };
}

export async function insertDocument(db: PoolClient, document: NewDocument): Promise<DocumentInfo> {
  const { rows } = await db.query<DocumentRow>(
    `INSERT INTO memory.documents
       (id, user_id, title, content_type, source, metadata, size_chars, chunk_count, page_count)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     RETURNING ${INFO_COLUMNS}`,
    [
      document.id,
      document.userId,
      document.title,
      document.contentType,
      document.source,
      JSON.stringify(document.metadata),
      document.sizeChars,
      document.chunkCount,
      document.pageCount,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('document insert returned no row');
  return toInfo(row);
}

// One statement for all of a document's chunks, however many. Answers when they were stored.
export async function insertChunks(
  db: PoolClient,
  userId: string,
  documentId: string,
  chunks: NewChunk[],
): Promise<Date> {
  const { rows } = await db.query<{ created_at: Date }>(
    `INSERT INTO memory.document_chunks
       (id, document_id, user_id, chunk_index, content, token_count, page)
     SELECT id, $1, $2, chunk_index, content, token_count, page
     FROM unnest($3::uuid[], $4::int[], $5::text[], $6::int[], $7::int[])
       AS t(id, chunk_index, content, token_count, page)
     RETURNING created_at`,
    [
      documentId,
      userId,
      chunks.map((chunk) => chunk.id),
      chunks.map((chunk) => chunk.index),
      chunks.map((chunk) => chunk.content),
      chunks.map((chunk) => chunk.tokenCount),
      chunks.map((chunk) => chunk.page ?? null),
    ],
  );
  // now() is fixed for the transaction: every chunk has the same time.
  const row = rows[0];
  if (!row) throw new Error('chunk insert returned no row');
  return row.created_at;
}

// Newest first; the id breaks ties between documents stored in the same transaction instant.
export async function listDocumentEntries(
  db: Queryable,
  userId: string,
  limit: number,
): Promise<DocumentEntry[]> {
  const { rows } = await db.query<Omit<DocumentRow, 'metadata'>>(
    `SELECT ${ENTRY_COLUMNS} FROM memory.documents
     WHERE user_id = $1
     ORDER BY created_at DESC, id
     LIMIT $2`,
    [userId, limit],
  );
  return rows.map(toEntry);
}

export async function findDocument(
  db: Queryable,
  userId: string,
  id: string,
): Promise<DocumentInfo | undefined> {
  const { rows } = await db.query<DocumentRow>(
    `SELECT ${INFO_COLUMNS} FROM memory.documents WHERE id = $1 AND user_id = $2`,
    [id, userId],
  );
  const row = rows[0];
  return row ? toInfo(row) : undefined;
}

// In order, from `fromIndex`.
export async function listChunksFrom(
  db: Queryable,
  userId: string,
  documentId: string,
  fromIndex: number,
): Promise<DocumentChunk[]> {
  const { rows } = await db.query<{
    chunk_index: number;
    content: string;
    token_count: number;
    page: number | null;
  }>(
    `SELECT chunk_index, content, token_count, page FROM memory.document_chunks
     WHERE document_id = $1 AND user_id = $2 AND chunk_index >= $3
     ORDER BY chunk_index`,
    [documentId, userId, fromIndex],
  );
  return rows.map((row) => ({
    index: row.chunk_index,
    content: row.content,
    tokenCount: row.token_count,
    ...(row.page === null ? {} : { page: row.page }),
  }));
}

// Embeddings have no foreign key to the items they describe (one table serves every kind), so
// a document's must go by hand, before its chunks do.
export async function deleteChunkEmbeddings(
  db: PoolClient,
  userId: string,
  documentId: string,
): Promise<void> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM memory.document_chunks WHERE document_id = $1 AND user_id = $2',
    [documentId, userId],
  );
  if (rows.length === 0) return;
  await db.query(
    `DELETE FROM memory.embeddings
     WHERE item_kind = 'document' AND user_id = $2 AND item_id = ANY($1::uuid[])`,
    [rows.map((row) => row.id), userId],
  );
}

// The chunks go with it (ON DELETE CASCADE). False when the user has no such document.
export async function removeDocument(db: PoolClient, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'DELETE FROM memory.documents WHERE id = $1 AND user_id = $2',
    [id, userId],
  );
  return (rowCount ?? 0) > 0;
}

// Full-text matches of any of the terms, best Postgres rank first.
async function searchChunkText(
  db: Queryable,
  filter: TextFilter,
  terms: string[],
  limit: number,
): Promise<string[]> {
  // Documents belong to no conversation: a search within one finds none.
  if (terms.length === 0 || filter.conversationId !== undefined) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM memory.document_chunks c, (SELECT ${termsQuery('$2')} AS q) query
     WHERE c.user_id = $1 AND c.search @@ query.q
       AND ($3::timestamptz IS NULL OR c.created_at >= $3)
       AND ($4::timestamptz IS NULL OR c.created_at < $4)
     ORDER BY ts_rank_cd(c.search, query.q) DESC, c.created_at DESC, c.id
     LIMIT $5`,
    [filter.userId, terms, filter.from ?? null, filter.to ?? null, limit],
  );
  return rows.map((row) => row.id);
}

async function loadChunks(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    content: string;
    chunk_index: number;
    created_at: Date;
    document_id: string;
    title: string;
    source: string | null;
    page: number | null;
  }>(
    `SELECT c.id, c.content, c.chunk_index, c.created_at, c.page, d.id AS document_id, d.title,
       d.source
     FROM memory.document_chunks c JOIN memory.documents d ON d.id = c.document_id
     WHERE c.user_id = $1 AND d.user_id = $1 AND c.id = ANY($2::uuid[])`,
    [userId, ids],
  );
  return rows.map((row) => ({
    kind: 'document',
    id: row.id,
    text: row.content,
    metadata: {
      documentId: row.document_id,
      title: row.title,
      chunkIndex: row.chunk_index,
      source: row.source,
      // The page the chunk begins on, so an answer can cite it; only for documents with pages.
      ...(row.page === null ? {} : { page: row.page }),
    },
    createdAt: row.created_at,
    conversationId: null,
    position: null,
    importance: DEFAULT_IMPORTANCE,
  }));
}

// A search result is one chunk: its id is the chunk's, its metadata names the document.
export const documentSource: SearchSource = { searchText: searchChunkText, load: loadChunks };

export async function listChunkContents(
  db: Queryable,
  userId: string,
  documentId: string,
): Promise<string[]> {
  const { rows } = await db.query<{ content: string }>(
    'SELECT content FROM memory.document_chunks WHERE document_id = $1 AND user_id = $2',
    [documentId, userId],
  );
  return rows.map((row) => row.content);
}
