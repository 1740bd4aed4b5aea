import type {
  DocumentContentType,
  ExportRecord,
  FactCategory,
  MessageRole,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// Where a record sits in its type's export order: a sort key (a sequence number, or a timestamp
// to the microsecond), an id and an index that break ties.
export type ExportPosition = { key: string; id: string; index: number };

// A record, or undefined when its content would not fit in the page's byte budget: the page ends
// before it.
export type ExportRow = { position: ExportPosition; record: ExportRecord | undefined };

// `after` is exclusive; `limit` rows at most.
export type ExportQuery = {
  userId: string;
  after: ExportPosition | undefined;
  limit: number;
  // Content bytes a page may carry; only types whose content can be large use it.
  maxBytes: number;
};

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

// Sort keys as text exact to the microsecond: a JavaScript Date has milliseconds only, and a
// cursor cut to them would skip the rows stored later in the same millisecond.
function timeKey(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
}

// Rows after ($2, $3, $4) in (time, id, index) order; no cursor ($2 null) means from the start.
function afterTime(time: string, id: string, index = '0'): string {
  return `($2::text IS NULL OR (${time}, ${id}, ${index})
    > ($2::timestamp AT TIME ZONE 'UTC', $3::uuid, $4::int))`;
}

// Content past the page's byte budget stays in the database: each row learns how many content
// bytes come before it on the page, and a row past the budget is sent without its content.
function bytesBefore(content: string, order: string): string {
  return `coalesce(sum(octet_length(${content})) OVER (ORDER BY ${order}
    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)`;
}

function parameters(query: ExportQuery): unknown[] {
  return [
    query.userId,
    query.after?.key ?? null,
    query.after?.id ?? null,
    query.after?.index ?? null,
    query.limit,
  ];
}

// The user's standing instructions, one row at most; none before they write some, or once they
// cleared them.
export async function listInstructionsForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    user_id: string;
    text: string;
    updated_at: Date;
    sort_key: string;
  }>(
    `SELECT user_id, text, updated_at, ${timeKey('updated_at')} AS sort_key
     FROM memory.instructions
     WHERE user_id = $1 AND text <> '' AND ${afterTime('updated_at', 'user_id')}
     LIMIT $5`,
    parameters(query),
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.user_id, index: 0 },
    record: { type: 'instructions', text: row.text, updatedAt: row.updated_at.toISOString() },
  }));
}

export async function listConversationsForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    is_default: boolean;
    created_at: Date;
    sort_key: string;
  }>(
    `SELECT id, is_default, created_at, ${timeKey('created_at')} AS sort_key
     FROM memory.conversations
     WHERE user_id = $1 AND ${afterTime('created_at', 'id')}
     ORDER BY created_at, id
     LIMIT $5`,
    parameters(query),
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.id, index: 0 },
    record: {
      type: 'conversation',
      id: row.id,
      isDefault: row.is_default,
      createdAt: row.created_at.toISOString(),
    },
  }));
}

// In stored order (seq), which is each conversation's order; forgotten messages are left out.
export async function listMessagesForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    conversation_id: string;
    role: MessageRole;
    content: string;
    author: string | null;
    metadata: Record<string, unknown>;
    created_at: Date;
    seq: string;
  }>(
    `SELECT id, conversation_id, role, content, author, metadata, created_at, seq
     FROM memory.messages
     WHERE user_id = $1 AND forgotten_at IS NULL AND seq > coalesce($2::bigint, 0)
     ORDER BY seq
     LIMIT $3`,
    [query.userId, query.after?.key ?? null, query.limit],
  );
  return rows.map((row) => ({
    position: { key: row.seq, id: row.id, index: 0 },
    record: {
      type: 'message',
      id: row.id,
      conversationId: row.conversation_id,
      role: row.role,
      content: row.content,
      author: row.author,
      metadata: row.metadata,
      createdAt: row.created_at.toISOString(),
    },
  }));
}

// A summary names its first and last messages that are not forgotten; one that covers only
// forgotten messages is left out.
export async function listSummariesForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    conversation_id: string;
    from_message_id: string;
    to_message_id: string;
    from_at: Date;
    to_at: Date;
    content: string;
    created_at: Date;
    from_seq: string;
  }>(
    `SELECT * FROM (
       SELECT s.id, s.conversation_id, s.from_at, s.to_at, s.content, s.created_at, s.from_seq,
         (SELECT m.id FROM memory.messages m
          WHERE m.conversation_id = s.conversation_id AND m.user_id = $1
            AND m.forgotten_at IS NULL AND m.seq BETWEEN s.from_seq AND s.to_seq
          ORDER BY m.seq LIMIT 1) AS from_message_id,
         (SELECT m.id FROM memory.messages m
          WHERE m.conversation_id = s.conversation_id AND m.user_id = $1
            AND m.forgotten_at IS NULL AND m.seq BETWEEN s.from_seq AND s.to_seq
          ORDER BY m.seq DESC LIMIT 1) AS to_message_id
       FROM memory.summaries s
       WHERE s.user_id = $1
         AND (s.from_seq, s.id) > (coalesce($2::bigint, 0), coalesce($3::uuid, '${NIL_UUID}'))
     ) covered
     WHERE from_message_id IS NOT NULL
     ORDER BY from_seq, id
     LIMIT $4`,
    [query.userId, query.after?.key ?? null, query.after?.id ?? null, query.limit],
  );
  return rows.map((row) => ({
    position: { key: row.from_seq, id: row.id, index: 0 },
    record: {
      type: 'summary',
      id: row.id,
      conversationId: row.conversation_id,
      fromMessageId: row.from_message_id,
      toMessageId: row.to_message_id,
      fromAt: row.from_at.toISOString(),
      toAt: row.to_at.toISOString(),
      content: row.content,
      createdAt: row.created_at.toISOString(),
    },
  }));
}

// Every version, valid or not, oldest first. Provenance keeps only messages that are exported.
export async function listFactsForExport(db: Queryable, query: ExportQuery): Promise<ExportRow[]> {
  const { rows } = await db.query<{
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
    sort_key: string;
  }>(
    `SELECT f.id, f.category, f.content, f.tags, f.importance,
       ARRAY(
         SELECT source.id FROM unnest(f.source_message_ids) WITH ORDINALITY AS source(id, n)
         JOIN memory.messages m
           ON m.id = source.id AND m.user_id = f.user_id AND m.forgotten_at IS NULL
         ORDER BY source.n
       )::text[] AS source_message_ids,
       f.valid_from, f.valid_to, f.superseded_by, f.created_at, f.updated_at,
       ${timeKey('f.created_at')} AS sort_key
     FROM memory.facts f
     WHERE f.user_id = $1 AND ${afterTime('f.created_at', 'f.id')}
     ORDER BY f.created_at, f.id
     LIMIT $5`,
    parameters(query),
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.id, index: 0 },
    record: {
      type: 'fact',
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
    },
  }));
}

// Deleted files too: they keep their history.
export async function listFilesForExport(db: Queryable, query: ExportQuery): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    path: string;
    content: string | null;
    tags: string[];
    metadata: Record<string, unknown>;
    version: number;
    created_at: Date;
    updated_at: Date;
    deleted_at: Date | null;
    sort_key: string;
  }>(
    `SELECT id, path, tags, metadata, version, created_at, updated_at, deleted_at, sort_key,
       CASE WHEN bytes_before < $6 THEN content END AS content
     FROM (
       SELECT id, path, content, tags, metadata, version, created_at, updated_at, deleted_at,
         ${timeKey('created_at')} AS sort_key,
         ${bytesBefore('content', 'created_at, id')} AS bytes_before
       FROM memory.files
       WHERE user_id = $1 AND ${afterTime('created_at', 'id')}
       ORDER BY created_at, id
       LIMIT $5
     ) page
     ORDER BY created_at, id`,
    [...parameters(query), query.maxBytes],
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.id, index: 0 },
    record:
      row.content === null
        ? undefined
        : {
            type: 'file',
            id: row.id,
            path: row.path,
            content: row.content,
            tags: row.tags,
            metadata: row.metadata,
            version: row.version,
            createdAt: row.created_at.toISOString(),
            updatedAt: row.updated_at.toISOString(),
            deletedAt: row.deleted_at?.toISOString() ?? null,
          },
  }));
}

// The versions files replaced, file by file (in the files' order), oldest version first.
export async function listFileVersionsForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    file_id: string;
    version: number;
    content: string | null;
    tags: string[];
    metadata: Record<string, unknown>;
    created_at: Date;
    sort_key: string;
  }>(
    `SELECT file_id, version, tags, metadata, created_at, sort_key,
       CASE WHEN bytes_before < $6 THEN content END AS content
     FROM (
       SELECT v.file_id, v.version, v.content, v.tags, v.metadata, v.created_at,
         f.created_at AS file_created_at, ${timeKey('f.created_at')} AS sort_key,
         ${bytesBefore('v.content', 'f.created_at, f.id, v.version')} AS bytes_before
       FROM memory.file_versions v JOIN memory.files f ON f.id = v.file_id
       WHERE f.user_id = $1 AND ${afterTime('f.created_at', 'f.id', 'v.version')}
       ORDER BY f.created_at, f.id, v.version
       LIMIT $5
     ) page
     ORDER BY file_created_at, file_id, version`,
    [...parameters(query), query.maxBytes],
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.file_id, index: row.version },
    record:
      row.content === null
        ? undefined
        : {
            type: 'fileVersion',
            fileId: row.file_id,
            version: row.version,
            content: row.content,
            tags: row.tags,
            metadata: row.metadata,
            createdAt: row.created_at.toISOString(),
          },
  }));
}

export async function listDocumentsForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    title: string;
    content_type: DocumentContentType;
    source: string | null;
    metadata: Record<string, unknown>;
    size_chars: number;
    chunk_count: number;
    page_count: number | null;
    created_at: Date;
    sort_key: string;
  }>(
    `SELECT id, title, content_type, source, metadata, size_chars, chunk_count, page_count,
       created_at, ${timeKey('created_at')} AS sort_key
     FROM memory.documents
     WHERE user_id = $1 AND ${afterTime('created_at', 'id')}
     ORDER BY created_at, id
     LIMIT $5`,
    parameters(query),
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.id, index: 0 },
    record: {
      type: 'document',
      id: row.id,
      title: row.title,
      contentType: row.content_type,
      source: row.source,
      metadata: row.metadata,
      sizeChars: row.size_chars,
      chunkCount: row.chunk_count,
      ...(row.page_count === null ? {} : { pages: row.page_count }),
      createdAt: row.created_at.toISOString(),
    },
  }));
}

// Document by document (in the documents' order), each one's chunks in order.
export async function listDocumentChunksForExport(
  db: Queryable,
  query: ExportQuery,
): Promise<ExportRow[]> {
  const { rows } = await db.query<{
    id: string;
    document_id: string;
    chunk_index: number;
    content: string;
    token_count: number;
    page: number | null;
    created_at: Date;
    sort_key: string;
  }>(
    `SELECT c.id, c.document_id, c.chunk_index, c.content, c.token_count, c.page, c.created_at,
       ${timeKey('d.created_at')} AS sort_key
     FROM memory.document_chunks c JOIN memory.documents d ON d.id = c.document_id
     WHERE c.user_id = $1 AND d.user_id = $1
       AND ${afterTime('d.created_at', 'd.id', 'c.chunk_index')}
     ORDER BY d.created_at, d.id, c.chunk_index
     LIMIT $5`,
    parameters(query),
  );
  return rows.map((row) => ({
    position: { key: row.sort_key, id: row.document_id, index: row.chunk_index },
    record: {
      type: 'documentChunk',
      id: row.id,
      documentId: row.document_id,
      index: row.chunk_index,
      content: row.content,
      tokenCount: row.token_count,
      ...(row.page === null ? {} : { page: row.page }),
      createdAt: row.created_at.toISOString(),
    },
  }));
}
