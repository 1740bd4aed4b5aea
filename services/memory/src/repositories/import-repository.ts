import type { DocumentContentType, FactCategory } from '@jarvis/contracts';
import type { PoolClient, Queryable } from '@jarvis/db';
import { isOpenFact } from './facts-repository';

// Restoring an export: rows arrive with their ids already derived for the importing user, and
// each insert skips rows stored before, so a batch sent twice adds nothing. A batch travels to
// Postgres as one JSON array per table (jsonb_to_recordset), whatever its size.

export type RestoredConversation = { id: string; isDefault: boolean; createdAt: string };

// The user's single default conversation stays the one they have: an imported default
// conversation becomes an ordinary one when the user already has a default. Answers the ids
// inserted.
export async function insertRestoredConversations(
  db: PoolClient,
  userId: string,
  conversations: RestoredConversation[],
): Promise<string[]> {
  if (conversations.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO memory.conversations (id, user_id, is_default, created_at)
     SELECT t.id, $1,
       t.is_default AND NOT EXISTS (
         SELECT 1 FROM memory.conversations c WHERE c.user_id = $1 AND c.is_default),
       t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, is_default boolean, created_at timestamptz)
     ON CONFLICT DO NOTHING
     RETURNING id`,
    [
      userId,
      JSON.stringify(
        conversations.map((conversation) => ({
          id: conversation.id,
          is_default: conversation.isDefault,
          created_at: conversation.createdAt,
        })),
      ),
    ],
  );
  return rows.map((row) => row.id);
}

export type RestoredSummary = {
  id: string;
  conversationId: string;
  fromMessageId: string;
  toMessageId: string;
  fromAt: string;
  toAt: string;
  content: string;
  createdAt: string;
};

export type InsertedSummary = { id: string; conversationId: string; content: string; toAt: Date };

// A summary covers its messages by their place in the conversation (seq), which the import gave
// them anew: the range is looked up from the first and last message it names, which must be the
// user's and in its conversation.
export async function insertRestoredSummaries(
  db: PoolClient,
  userId: string,
  summaries: RestoredSummary[],
): Promise<InsertedSummary[]> {
  if (summaries.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    conversation_id: string;
    content: string;
    to_at: Date;
  }>(
    `INSERT INTO memory.summaries
       (id, user_id, conversation_id, from_seq, to_seq, from_at, to_at, content, created_at)
     SELECT t.id, $1, t.conversation_id, opening.seq, closing.seq, t.from_at, t.to_at, t.content,
       t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, conversation_id uuid, from_message_id uuid,
       to_message_id uuid, from_at timestamptz, to_at timestamptz, content text,
       created_at timestamptz)
     JOIN memory.messages opening ON opening.id = t.from_message_id AND opening.user_id = $1
       AND opening.conversation_id = t.conversation_id
     JOIN memory.messages closing ON closing.id = t.to_message_id AND closing.user_id = $1
       AND closing.conversation_id = t.conversation_id
     ON CONFLICT DO NOTHING
     RETURNING id, conversation_id, content, to_at`,
    [
      userId,
      JSON.stringify(
        summaries.map((summary) => ({
          id: summary.id,
          conversation_id: summary.conversationId,
          from_message_id: summary.fromMessageId,
          to_message_id: summary.toMessageId,
          from_at: summary.fromAt,
          to_at: summary.toAt,
          content: summary.content,
          created_at: summary.createdAt,
        })),
      ),
    ],
  );
  return rows.map((row) => ({
    id: row.id,
    conversationId: row.conversation_id,
    content: row.content,
    toAt: row.to_at,
  }));
}

export type RestoredFact = {
  id: string;
  category: FactCategory;
  content: string;
  tags: string[];
  importance: number;
  sourceMessageIds: string[];
  validFrom: string;
  validTo: string | null;
  supersededBy: string | null;
  createdAt: string;
  updatedAt: string;
  // Stored as ended now, by the database's clock, whatever the file says: a current standing
  // rule that would pass the cap.
  endsAtImport: boolean;
};

export type InsertedFact = { id: string; content: string; createdAt: string; isValid: boolean };

// Which of these fact ids the user has already (a file imported before).
export async function listStoredFactIds(
  db: Queryable,
  userId: string,
  ids: string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM memory.facts WHERE user_id = $1 AND id = ANY($2::uuid[])',
    [userId, ids],
  );
  return new Set(rows.map((row) => row.id));
}

// One statement, so a version may name a successor anywhere in the batch (the foreign key is
// checked when the statement ends); a successor in another batch must have come before.
export async function insertRestoredFacts(
  db: PoolClient,
  userId: string,
  facts: RestoredFact[],
): Promise<InsertedFact[]> {
  if (facts.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    content: string;
    created_at: Date;
    is_valid: boolean;
  }>(
    `INSERT INTO memory.facts (id, user_id, category, content, tags, importance,
       source_message_ids, valid_from, valid_to, superseded_by, created_at, updated_at)
     SELECT t.id, $1, t.category, t.content, t.tags, t.importance, t.source_message_ids,
       CASE WHEN t.ends_at_import THEN least(t.valid_from, now()) ELSE t.valid_from END,
       CASE WHEN t.ends_at_import THEN now() ELSE t.valid_to END,
       t.superseded_by, t.created_at,
       CASE WHEN t.ends_at_import THEN now() ELSE t.updated_at END
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, category text, content text, tags text[],
       importance int, source_message_ids uuid[], valid_from timestamptz, valid_to timestamptz,
       superseded_by uuid, created_at timestamptz, updated_at timestamptz,
       ends_at_import boolean)
     ON CONFLICT DO NOTHING
     RETURNING id, content, created_at, ${isOpenFact()} AS is_valid`,
    [
      userId,
      JSON.stringify(
        facts.map((fact) => ({
          id: fact.id,
          category: fact.category,
          content: fact.content,
          tags: fact.tags,
          importance: fact.importance,
          source_message_ids: fact.sourceMessageIds,
          valid_from: fact.validFrom,
          valid_to: fact.validTo,
          superseded_by: fact.supersededBy,
          created_at: fact.createdAt,
          updated_at: fact.updatedAt,
          ends_at_import: fact.endsAtImport,
        })),
      ),
    ],
  );
  return rows.map((row) => ({
    id: row.id,
    content: row.content,
    createdAt: row.created_at.toISOString(),
    isValid: row.is_valid,
  }));
}

export type RestoredFile = {
  id: string;
  path: string;
  content: string;
  tags: string[];
  metadata: Record<string, unknown>;
  version: number;
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
};

export type InsertedFile = {
  id: string;
  path: string;
  content: string;
  updatedAt: string;
  isDeleted: boolean;
};

// A live file whose path the user's own live file already holds is skipped, like one stored
// before: paths stay unique.
export async function insertRestoredFiles(
  db: PoolClient,
  userId: string,
  files: RestoredFile[],
): Promise<InsertedFile[]> {
  if (files.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    path: string;
    content: string;
    updated_at: Date;
    is_deleted: boolean;
  }>(
    `INSERT INTO memory.files
       (id, user_id, path, content, tags, metadata, version, created_at, updated_at, deleted_at)
     SELECT t.id, $1, t.path, t.content, t.tags, t.metadata, t.version, t.created_at,
       t.updated_at, t.deleted_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, path text, content text, tags text[],
       metadata jsonb, version int, created_at timestamptz, updated_at timestamptz,
       deleted_at timestamptz)
     ON CONFLICT DO NOTHING
     RETURNING id, path, content, updated_at, deleted_at IS NOT NULL AS is_deleted`,
    [
      userId,
      JSON.stringify(
        files.map((file) => ({
          id: file.id,
          path: file.path,
          content: file.content,
          tags: file.tags,
          metadata: file.metadata,
          version: file.version,
          created_at: file.createdAt,
          updated_at: file.updatedAt,
          deleted_at: file.deletedAt,
        })),
      ),
    ],
  );
  return rows.map((row) => ({
    id: row.id,
    path: row.path,
    content: row.content,
    updatedAt: row.updated_at.toISOString(),
    isDeleted: row.is_deleted,
  }));
}

export type RestoredFileVersion = {
  fileId: string;
  version: number;
  content: string;
  tags: string[];
  metadata: Record<string, unknown>;
  createdAt: string;
};

// Only versions of the user's own files.
export async function insertRestoredFileVersions(
  db: PoolClient,
  userId: string,
  versions: RestoredFileVersion[],
): Promise<void> {
  if (versions.length === 0) return;
  await db.query(
    `INSERT INTO memory.file_versions (file_id, version, content, tags, metadata, created_at)
     SELECT t.file_id, t.version, t.content, t.tags, t.metadata, t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(file_id uuid, version int, content text,
       tags text[], metadata jsonb, created_at timestamptz)
     JOIN memory.files f ON f.id = t.file_id AND f.user_id = $1
     ON CONFLICT DO NOTHING`,
    [
      userId,
      JSON.stringify(
        versions.map((version) => ({
          file_id: version.fileId,
          version: version.version,
          content: version.content,
          tags: version.tags,
          metadata: version.metadata,
          created_at: version.createdAt,
        })),
      ),
    ],
  );
}

export type RestoredDocument = {
  id: string;
  title: string;
  contentType: DocumentContentType;
  source: string | null;
  metadata: Record<string, unknown>;
  sizeChars: number;
  chunkCount: number;
  pages?: number | undefined;
  createdAt: string;
};

export async function insertRestoredDocuments(
  db: PoolClient,
  userId: string,
  documents: RestoredDocument[],
): Promise<string[]> {
  if (documents.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO memory.documents
       (id, user_id, title, content_type, source, metadata, size_chars, chunk_count, page_count,
        created_at)
     SELECT t.id, $1, t.title, t.content_type, t.source, t.metadata, t.size_chars, t.chunk_count,
       t.page_count, t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, title text, content_type text, source text,
       metadata jsonb, size_chars int, chunk_count int, page_count int, created_at timestamptz)
     ON CONFLICT DO NOTHING
     RETURNING id`,
    [
      userId,
      JSON.stringify(
        documents.map((document) => ({
          id: document.id,
          title: document.title,
          content_type: document.contentType,
          source: document.source,
          metadata: document.metadata,
          size_chars: document.sizeChars,
          chunk_count: document.chunkCount,
          page_count: document.pages ?? null,
          created_at: document.createdAt,
        })),
      ),
    ],
  );
  return rows.map((row) => row.id);
}

export type RestoredChunk = {
  id: string;
  documentId: string;
  index: number;
  content: string;
  tokenCount: number;
  page?: number | undefined;
  createdAt: string;
};

export type StoredChunk = {
  id: string;
  documentId: string;
  index: number;
  content: string;
  tokenCount: number;
  createdAt: Date;
};

type ChunkRow = {
  id: string;
  document_id: string;
  chunk_index: number;
  content: string;
  token_count: number;
  created_at: Date;
};

function toStoredChunk(row: ChunkRow): StoredChunk {
  return {
    id: row.id,
    documentId: row.document_id,
    index: row.chunk_index,
    content: row.content,
    tokenCount: row.token_count,
    createdAt: row.created_at,
  };
}

// Only chunks of the user's own documents. Answers the chunks inserted.
export async function insertRestoredChunks(
  db: PoolClient,
  userId: string,
  chunks: RestoredChunk[],
): Promise<StoredChunk[]> {
  if (chunks.length === 0) return [];
  const { rows } = await db.query<ChunkRow>(
    `INSERT INTO memory.document_chunks
       (id, document_id, user_id, chunk_index, content, token_count, page, created_at)
     SELECT t.id, t.document_id, $1, t.chunk_index, t.content, t.token_count, t.page, t.created_at
     FROM jsonb_to_recordset($2::jsonb) AS t(id uuid, document_id uuid, chunk_index int,
       content text, token_count int, page int, created_at timestamptz)
     JOIN memory.documents d ON d.id = t.document_id AND d.user_id = $1
     ON CONFLICT DO NOTHING
     RETURNING id, document_id, chunk_index, content, token_count, created_at`,
    [
      userId,
      JSON.stringify(
        chunks.map((chunk) => ({
          id: chunk.id,
          document_id: chunk.documentId,
          chunk_index: chunk.index,
          content: chunk.content,
          token_count: chunk.tokenCount,
          page: chunk.page ?? null,
          created_at: chunk.createdAt,
        })),
      ),
    ],
  );
  return rows.map(toStoredChunk);
}

// All of a document's chunks, in order: each is embedded with its neighbours as context.
export async function listChunksToIndex(
  db: Queryable,
  userId: string,
  documentId: string,
): Promise<StoredChunk[]> {
  const { rows } = await db.query<ChunkRow>(
    `SELECT id, document_id, chunk_index, content, token_count, created_at
     FROM memory.document_chunks
     WHERE document_id = $1 AND user_id = $2
     ORDER BY chunk_index`,
    [documentId, userId],
  );
  return rows.map(toStoredChunk);
}
