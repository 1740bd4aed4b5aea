import { randomUUID } from 'node:crypto';
import type {
  FileGrepMatch,
  FileSearchHit,
  FileVersionEntry,
  MemoryFile,
  MemoryFileEntry,
} from '@jarvis/contracts';
import type { PoolClient, Queryable } from '@jarvis/db';
import {
  DEFAULT_IMPORTANCE,
  type ItemDetails,
  type SearchSource,
  type TextFilter,
  termsQuery,
} from './search-repository';

export type StoredFile = MemoryFile & { id: string };

export type FileContentFields = {
  content: string;
  tags: string[];
  metadata: Record<string, unknown>;
};

export type StoredVersion = FileContentFields & {
  version: number;
  size: number;
  createdAt: string;
};

type FileRow = {
  id: string;
  path: string;
  content: string;
  tags: string[];
  metadata: Record<string, unknown>;
  version: number;
  size: number;
  created_at: Date;
  updated_at: Date;
};

// Only this much of a file is in its search index (migration 003_files.sql): snippets come from
// the same part.
const INDEXED_CONTENT_CHARS = 200_000;

// octet_length reads the stored length without decompressing the content.
const FILE_COLUMNS =
  'id, path, content, tags, metadata, version, octet_length(content) AS size, created_at, updated_at';

function toStoredFile(row: FileRow): StoredFile {
  return {
    id: row.id,
    path: row.path,
    content: row.content,
    tags: row.tags,
    metadata: row.metadata,
    version: row.version,
    size: row.size,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

// Paths sort by code point, the same on every server whatever its locale.
export async function listLiveFiles(
  db: Queryable,
  userId: string,
  prefix: string,
  limit: number,
): Promise<MemoryFileEntry[]> {
  const { rows } = await db.query<{
    path: string;
    version: number;
    size: number;
    tags: string[];
    updated_at: Date;
  }>(
    `SELECT path, version, octet_length(content) AS size, tags, updated_at FROM memory.files
     WHERE user_id = $1 AND deleted_at IS NULL AND starts_with(path, $2)
     ORDER BY path COLLATE "C"
     LIMIT $3`,
    [userId, prefix, limit],
  );
  return rows.map((row) => ({
    path: row.path,
    version: row.version,
    size: row.size,
    tags: row.tags,
    updatedAt: row.updated_at.toISOString(),
  }));
}

export type FileHead = { path: string; head: string };

// The first `headChars` characters of each live file under the prefix, in path order: enough
// for a skill's front matter without reading whole procedures.
export async function listLiveFileHeads(
  db: Queryable,
  userId: string,
  prefix: string,
  headChars: number,
  limit: number,
): Promise<FileHead[]> {
  const { rows } = await db.query<FileHead>(
    `SELECT path, left(content, $3) AS head FROM memory.files
     WHERE user_id = $1 AND deleted_at IS NULL AND starts_with(path, $2)
     ORDER BY path COLLATE "C"
     LIMIT $4`,
    [userId, prefix, headChars, limit],
  );
  return rows;
}

// Live files under the prefix other than the one at `exceptPath`.
export async function countOtherLiveFiles(
  db: Queryable,
  userId: string,
  prefix: string,
  exceptPath: string,
): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    `SELECT count(*) FROM memory.files
     WHERE user_id = $1 AND deleted_at IS NULL AND starts_with(path, $2) AND path <> $3`,
    [userId, prefix, exceptPath],
  );
  return Number(rows[0]?.count ?? 0);
}

export async function findLiveFile(
  db: Queryable,
  userId: string,
  path: string,
): Promise<StoredFile | undefined> {
  const { rows } = await db.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM memory.files
     WHERE user_id = $1 AND path = $2 AND deleted_at IS NULL`,
    [userId, path],
  );
  const row = rows[0];
  return row ? toStoredFile(row) : undefined;
}

// Holds the row until the transaction ends, so concurrent changes to one file take turns.
export function lockLiveFile(
  db: PoolClient,
  userId: string,
  path: string,
): Promise<StoredFile | undefined> {
  return lockLiveFileWhere(db, userId, 'path', path);
}

// lockLiveFile by the file's id (a search result names a file by it).
export function lockLiveFileById(
  db: PoolClient,
  userId: string,
  id: string,
): Promise<StoredFile | undefined> {
  return lockLiveFileWhere(db, userId, 'id', id);
}

async function lockLiveFileWhere(
  db: PoolClient,
  userId: string,
  column: 'path' | 'id',
  value: string,
): Promise<StoredFile | undefined> {
  const { rows } = await db.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM memory.files
     WHERE user_id = $1 AND ${column} = $2 AND deleted_at IS NULL
     FOR UPDATE`,
    [userId, value],
  );
  const row = rows[0];
  return row ? toStoredFile(row) : undefined;
}

// Creates version 1, or returns undefined when a live file already has the path.
export async function insertFile(
  db: PoolClient,
  file: FileContentFields & { userId: string; path: string },
): Promise<StoredFile | undefined> {
  const { rows } = await db.query<FileRow>(
    `INSERT INTO memory.files (id, user_id, path, content, tags, metadata)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (user_id, path) WHERE deleted_at IS NULL DO NOTHING
     RETURNING ${FILE_COLUMNS}`,
    [randomUUID(), file.userId, file.path, file.content, file.tags, JSON.stringify(file.metadata)],
  );
  const row = rows[0];
  return row ? toStoredFile(row) : undefined;
}

export async function archiveCurrentVersion(
  db: PoolClient,
  userId: string,
  fileId: string,
): Promise<void> {
  await db.query(
    `INSERT INTO memory.file_versions (file_id, version, content, tags, metadata, created_at)
     SELECT id, version, content, tags, metadata, updated_at FROM memory.files
     WHERE id = $1 AND user_id = $2`,
    [fileId, userId],
  );
}

export async function updateFileContent(
  db: PoolClient,
  userId: string,
  fileId: string,
  next: FileContentFields,
): Promise<StoredFile> {
  const { rows } = await db.query<FileRow>(
    `UPDATE memory.files
     SET content = $3, tags = $4, metadata = $5, version = version + 1, updated_at = now()
     WHERE id = $1 AND user_id = $2
     RETURNING ${FILE_COLUMNS}`,
    [fileId, userId, next.content, next.tags, JSON.stringify(next.metadata)],
  );
  const row = rows[0];
  if (!row) throw new Error('locked file vanished before its update');
  return toStoredFile(row);
}

export async function markFileDeleted(
  db: PoolClient,
  userId: string,
  fileId: string,
): Promise<void> {
  await db.query('UPDATE memory.files SET deleted_at = now() WHERE id = $1 AND user_id = $2', [
    fileId,
    userId,
  ]);
}

// A version the file no longer holds (the current one is on the file itself).
export async function findArchivedVersion(
  db: Queryable,
  userId: string,
  fileId: string,
  version: number,
): Promise<StoredVersion | undefined> {
  const { rows } = await db.query<{
    version: number;
    content: string;
    tags: string[];
    metadata: Record<string, unknown>;
    size: number;
    created_at: Date;
  }>(
    `SELECT v.version, v.content, v.tags, v.metadata, octet_length(v.content) AS size, v.created_at
     FROM memory.file_versions v JOIN memory.files f ON f.id = v.file_id
     WHERE f.user_id = $1 AND v.file_id = $2 AND v.version = $3`,
    [userId, fileId, version],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    version: row.version,
    content: row.content,
    tags: row.tags,
    metadata: row.metadata,
    size: row.size,
    createdAt: row.created_at.toISOString(),
  };
}

// The newest `limit` versions the file no longer holds, newest first.
export async function listArchivedVersions(
  db: Queryable,
  userId: string,
  fileId: string,
  limit: number,
): Promise<FileVersionEntry[]> {
  const { rows } = await db.query<{
    version: number;
    size: number;
    tags: string[];
    created_at: Date;
  }>(
    `SELECT v.version, octet_length(v.content) AS size, v.tags, v.created_at
     FROM memory.file_versions v JOIN memory.files f ON f.id = v.file_id
     WHERE f.user_id = $1 AND v.file_id = $2
     ORDER BY v.version DESC
     LIMIT $3`,
    [userId, fileId, limit],
  );
  return rows.map((row) => ({
    version: row.version,
    size: row.size,
    tags: row.tags,
    createdAt: row.created_at.toISOString(),
    isCurrent: false,
  }));
}

export type GrepCandidate = { id: string; bytesThrough: number };

// The first `limit` live files under the prefix in path order, each with the bytes of it and
// the files before it.
export async function listGrepCandidates(
  db: Queryable,
  userId: string,
  prefix: string,
  limit: number,
): Promise<GrepCandidate[]> {
  const { rows } = await db.query<{ id: string; bytes_through: string }>(
    `SELECT id, sum(octet_length(content)) OVER (ORDER BY path COLLATE "C") AS bytes_through
     FROM memory.files
     WHERE user_id = $1 AND deleted_at IS NULL AND starts_with(path, $2)
     ORDER BY path COLLATE "C"
     LIMIT $3`,
    [userId, prefix, limit],
  );
  return rows.map((row) => ({ id: row.id, bytesThrough: Number(row.bytes_through) }));
}

export type GrepQuery = {
  userId: string;
  fileIds: string[];
  pattern: string;
  isRegex: boolean;
  limit: number;
  lineMaxChars: number;
};

// Lines split on \n (a trailing \r is dropped) and numbered from 1. A regex runs in Postgres,
// whose engine does not backtrack without backreferences; a substring skips files without it
// first.
const GREP_REGEX_SQL = `
  SELECT f.path, l.number::int AS line, left(l.text, $5) AS text
  FROM memory.files f
  CROSS JOIN LATERAL regexp_split_to_table(f.content, E'\\r?\\n') WITH ORDINALITY AS l(text, number)
  WHERE f.user_id = $1 AND f.id = ANY($2::uuid[]) AND f.deleted_at IS NULL
    AND l.text ~* $3
  ORDER BY f.path COLLATE "C", l.number
  LIMIT $4`;
const GREP_SUBSTRING_SQL = `
  SELECT f.path, l.number::int AS line, left(l.text, $5) AS text
  FROM memory.files f
  CROSS JOIN LATERAL regexp_split_to_table(f.content, E'\\r?\\n') WITH ORDINALITY AS l(text, number)
  WHERE f.user_id = $1 AND f.id = ANY($2::uuid[]) AND f.deleted_at IS NULL
    AND strpos(lower(f.content), lower($3)) > 0
    AND strpos(lower(l.text), lower($3)) > 0
  ORDER BY f.path COLLATE "C", l.number
  LIMIT $4`;

export async function grepLines(db: Queryable, query: GrepQuery): Promise<FileGrepMatch[]> {
  const { rows } = await db.query<FileGrepMatch>(
    query.isRegex ? GREP_REGEX_SQL : GREP_SUBSTRING_SQL,
    [query.userId, query.fileIds, query.pattern, query.limit, query.lineMaxChars],
  );
  return rows;
}

// Ranked first, then only the kept rows get a snippet: ts_headline re-parses the content.
export async function searchLiveFiles(
  db: Queryable,
  userId: string,
  query: string,
  limit: number,
): Promise<FileSearchHit[]> {
  const { rows } = await db.query<{
    path: string;
    version: number;
    rank: number;
    snippet: string;
    updated_at: Date;
  }>(
    `SELECT hit.path, hit.version, hit.rank, hit.updated_at,
       ts_headline('english', left(hit.content, $4), hit.query,
         'StartSel=**, StopSel=**, MaxFragments=2, MinWords=5, MaxWords=20') AS snippet
     FROM (
       SELECT f.path, f.version, f.content, f.updated_at, q.query,
         ts_rank(f.search, q.query) AS rank
       FROM memory.files f, websearch_to_tsquery('english', $2) AS q(query)
       WHERE f.user_id = $1 AND f.deleted_at IS NULL AND f.search @@ q.query
       ORDER BY rank DESC, f.path COLLATE "C"
       LIMIT $3
     ) hit
     ORDER BY hit.rank DESC, hit.path COLLATE "C"`,
    [userId, query, limit, INDEXED_CONTENT_CHARS],
  );
  return rows.map((row) => ({
    path: row.path,
    version: row.version,
    rank: row.rank,
    snippet: row.snippet,
    updatedAt: row.updated_at.toISOString(),
  }));
}

async function searchFileText(
  db: Queryable,
  filter: TextFilter,
  terms: string[],
  limit: number,
): Promise<string[]> {
  // Files belong to no conversation.
  if (terms.length === 0 || filter.conversationId) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT f.id FROM memory.files f, (SELECT ${termsQuery('$2')} AS q) query
     WHERE f.user_id = $1 AND f.deleted_at IS NULL AND f.search @@ query.q
       AND ($3::timestamptz IS NULL OR f.updated_at >= $3)
       AND ($4::timestamptz IS NULL OR f.updated_at < $4)
     ORDER BY ts_rank_cd(f.search, query.q) DESC LIMIT $5`,
    [filter.userId, terms, filter.from ?? null, filter.to ?? null, limit],
  );
  return rows.map((row) => row.id);
}

// A search result shows the start of a file, not all of it: a file may be a megabyte.
const RESULT_TEXT_CHARS = 2_000;

async function loadFileItems(db: Queryable, userId: string, ids: string[]): Promise<ItemDetails[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{
    id: string;
    path: string;
    version: number;
    tags: string[];
    text: string;
    updated_at: Date;
  }>(
    `SELECT id, path, version, tags, left(content, $3) AS text, updated_at FROM memory.files
     WHERE user_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL`,
    [userId, ids, RESULT_TEXT_CHARS],
  );
  return rows.map((row) => ({
    kind: 'file',
    id: row.id,
    text: row.text,
    metadata: { path: row.path, version: row.version, tags: row.tags },
    createdAt: row.updated_at,
    conversationId: null,
    position: null,
    importance: DEFAULT_IMPORTANCE,
  }));
}

export const fileSource: SearchSource = { searchText: searchFileText, load: loadFileItems };

export async function deleteFileEmbeddings(db: Queryable, fileId: string): Promise<void> {
  await db.query("DELETE FROM memory.embeddings WHERE item_kind = 'file' AND item_id = $1", [
    fileId,
  ]);
}
