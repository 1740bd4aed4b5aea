import { BusError } from '@jarvis/bus';
import {
  FILE_CONTENT_MAX_CHARS,
  FILE_GREP_LINE_MAX_CHARS,
  FILE_GREP_MAX_BYTES,
  FILE_GREP_MAX_FILES,
  FILE_GREP_MAX_MATCHES,
  FILE_HISTORY_MAX,
  FILE_LIST_MAX,
  type MemoryFileInfo,
  type MemoryFilesDeleteResponse,
  type MemoryFilesEditResponse,
  type MemoryFilesGrepResponse,
  type MemoryFilesHistoryResponse,
  type MemoryFilesListResponse,
  type MemoryFilesReadResponse,
  type MemoryFilesRestoreResponse,
  type MemoryFilesSearchResponse,
  type MemoryFilesWriteResponse,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withTransaction } from '@jarvis/db';
import {
  archiveCurrentVersion,
  type FileContentFields,
  findArchivedVersion,
  findLiveFile,
  grepLines,
  insertFile,
  listArchivedVersions,
  listGrepCandidates,
  listLiveFiles,
  lockLiveFile,
  markFileDeleted,
  type StoredFile,
  searchLiveFiles,
  updateFileContent,
} from '../repositories/files-repository';
import { indexFile, unindexFile } from './index-files';
import { refuseInvalidSkill, refuseSkillPastLimit } from './skills';

type FileRequest = { userId: string; path: string };

// A missing file, a deleted one and another user's answer the same, so paths never leak.
function fileNotFound(): BusError {
  return new BusError('not_found', 'file not found');
}

function versionNotFound(version: number): BusError {
  return new BusError('not_found', `version ${version} not found`);
}

function toInfo(file: StoredFile): MemoryFileInfo {
  return {
    path: file.path,
    version: file.version,
    size: file.size,
    tags: file.tags,
    metadata: file.metadata,
    createdAt: file.createdAt,
    updatedAt: file.updatedAt,
  };
}

// Keeps the version being replaced, then writes the next one over it. Writes, edits and
// restores all pass here, so a skill's file is checked here.
async function replaceCurrentVersion(
  db: PoolClient,
  userId: string,
  current: StoredFile,
  next: FileContentFields,
): Promise<StoredFile> {
  refuseInvalidSkill(current.path, next.content);
  await archiveCurrentVersion(db, userId, current.id);
  const file = await updateFileContent(db, userId, current.id, next);
  await indexFile(db, userId, file, current);
  return file;
}

export async function listFiles(
  pool: Pool,
  request: { userId: string; prefix?: string | undefined },
): Promise<MemoryFilesListResponse> {
  const files = await listLiveFiles(pool, request.userId, request.prefix ?? '', FILE_LIST_MAX + 1);
  return { files: files.slice(0, FILE_LIST_MAX), isTruncated: files.length > FILE_LIST_MAX };
}

export async function readFile(
  pool: Pool,
  request: FileRequest & { version?: number | undefined },
): Promise<MemoryFilesReadResponse> {
  const file = await findLiveFile(pool, request.userId, request.path);
  if (!file) throw fileNotFound();
  if (request.version === undefined || request.version === file.version) {
    return { file: { ...toInfo(file), content: file.content } };
  }
  const earlier = await findArchivedVersion(pool, request.userId, file.id, request.version);
  if (!earlier) throw versionNotFound(request.version);
  return {
    file: {
      path: file.path,
      version: earlier.version,
      size: earlier.size,
      tags: earlier.tags,
      metadata: earlier.metadata,
      content: earlier.content,
      createdAt: file.createdAt,
      updatedAt: earlier.createdAt,
    },
  };
}

type WriteRequest = FileRequest & {
  content: string;
  tags?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
};

// Version 1 of a new file, made searchable; undefined when a live file holds the path.
async function insertIndexedFile(
  db: PoolClient,
  request: WriteRequest,
): Promise<StoredFile | undefined> {
  refuseInvalidSkill(request.path, request.content);
  await refuseSkillPastLimit(db, request.userId, request.path);
  const created = await insertFile(db, {
    userId: request.userId,
    path: request.path,
    content: request.content,
    tags: request.tags ?? [],
    metadata: request.metadata ?? {},
  });
  if (created) await indexFile(db, request.userId, created);
  return created;
}

// Writes a file only if none holds its path, and says whether it did: of two writers at once,
// one creates it and the other finds it there, as the live path is unique (migration 003).
export async function createFileIfAbsent(pool: Pool, request: WriteRequest): Promise<boolean> {
  const created = await withTransaction(pool, (db) => insertIndexedFile(db, request));
  return created !== undefined;
}

export async function writeFile(
  pool: Pool,
  request: WriteRequest,
): Promise<MemoryFilesWriteResponse> {
  return withTransaction(pool, async (db) => {
    const created = await insertIndexedFile(db, request);
    if (created) return { file: toInfo(created) };
    const current = await lockLiveFile(db, request.userId, request.path);
    // The file holding the path was deleted between the insert and the lock.
    if (!current) throw new BusError('conflict', 'the file changed while being written; retry');
    const file = await replaceCurrentVersion(db, request.userId, current, {
      content: request.content,
      tags: request.tags ?? current.tags,
      metadata: request.metadata ?? current.metadata,
    });
    return { file: toInfo(file) };
  });
}

// Exact text rather than a pattern, so the caller can paste what it read. Overlapping
// occurrences count as ambiguous too: either could be the one meant.
function replaceOnce(content: string, old: string, replacement: string, path: string): string {
  const at = content.indexOf(old);
  if (at === -1) throw new BusError('bad_request', `old: text not found in ${path}`);
  if (content.indexOf(old, at + 1) !== -1) {
    throw new BusError(
      'bad_request',
      `old: text is ambiguous, it occurs more than once in ${path}; include more of the surrounding text`,
    );
  }
  const edited = content.slice(0, at) + replacement + content.slice(at + old.length);
  if (edited.length > FILE_CONTENT_MAX_CHARS) {
    throw new BusError(
      'bad_request',
      `new: the edited content would exceed ${FILE_CONTENT_MAX_CHARS} characters`,
    );
  }
  return edited;
}

export async function editFile(
  pool: Pool,
  request: FileRequest & { old: string; new: string },
): Promise<MemoryFilesEditResponse> {
  return withTransaction(pool, async (db) => {
    const current = await lockLiveFile(db, request.userId, request.path);
    if (!current) throw fileNotFound();
    const file = await replaceCurrentVersion(db, request.userId, current, {
      content: replaceOnce(current.content, request.old, request.new, current.path),
      tags: current.tags,
      metadata: current.metadata,
    });
    return { file: toInfo(file) };
  });
}

function isInvalidRegexError(error: unknown): error is Error {
  return error instanceof Error && 'code' in error && error.code === '2201B';
}

export async function grepFiles(
  pool: Pool,
  request: { userId: string; pattern: string; prefix?: string | undefined; isRegex: boolean },
): Promise<MemoryFilesGrepResponse> {
  // Reading stops at the first file past either bound, so what is read is always the start of
  // the path order, and a narrower prefix reads what was left.
  const candidates = await listGrepCandidates(
    pool,
    request.userId,
    request.prefix ?? '',
    FILE_GREP_MAX_FILES + 1,
  );
  const firstUnread = candidates.findIndex(
    (file, index) => index >= FILE_GREP_MAX_FILES || file.bytesThrough > FILE_GREP_MAX_BYTES,
  );
  const files = firstUnread === -1 ? candidates : candidates.slice(0, firstUnread);
  try {
    const matches = await grepLines(pool, {
      userId: request.userId,
      fileIds: files.map((file) => file.id),
      pattern: request.pattern,
      isRegex: request.isRegex,
      limit: FILE_GREP_MAX_MATCHES + 1,
      lineMaxChars: FILE_GREP_LINE_MAX_CHARS,
    });
    return {
      matches: matches.slice(0, FILE_GREP_MAX_MATCHES),
      isTruncated: matches.length > FILE_GREP_MAX_MATCHES || files.length < candidates.length,
    };
  } catch (error) {
    if (isInvalidRegexError(error)) throw new BusError('bad_request', `pattern: ${error.message}`);
    throw error;
  }
}

export async function searchFiles(
  pool: Pool,
  request: { userId: string; query: string; limit: number },
): Promise<MemoryFilesSearchResponse> {
  return { results: await searchLiveFiles(pool, request.userId, request.query, request.limit) };
}

export async function deleteFile(
  pool: Pool,
  request: FileRequest,
): Promise<MemoryFilesDeleteResponse> {
  return withTransaction(pool, async (db) => {
    const current = await lockLiveFile(db, request.userId, request.path);
    if (!current) throw fileNotFound();
    await deleteLockedFile(db, request.userId, current);
    return { path: current.path };
  });
}

// Deletes a live file the transaction holds (lockLiveFile, lockLiveFileById): its current version
// joins its history, and it leaves search and recall.
export async function deleteLockedFile(
  db: PoolClient,
  userId: string,
  file: StoredFile,
): Promise<void> {
  await archiveCurrentVersion(db, userId, file.id);
  await markFileDeleted(db, userId, file.id);
  await unindexFile(db, userId, file);
}

export async function listFileHistory(
  pool: Pool,
  request: FileRequest,
): Promise<MemoryFilesHistoryResponse> {
  const file = await findLiveFile(pool, request.userId, request.path);
  if (!file) throw fileNotFound();
  const archivedMax = FILE_HISTORY_MAX - 1;
  const archived = await listArchivedVersions(pool, request.userId, file.id, archivedMax + 1);
  const current = {
    version: file.version,
    size: file.size,
    tags: file.tags,
    createdAt: file.updatedAt,
    isCurrent: true,
  };
  return {
    versions: [current, ...archived.slice(0, archivedMax)],
    isTruncated: archived.length > archivedMax,
  };
}

export async function restoreFile(
  pool: Pool,
  request: FileRequest & { version: number },
): Promise<MemoryFilesRestoreResponse> {
  return withTransaction(pool, async (db) => {
    const current = await lockLiveFile(db, request.userId, request.path);
    if (!current) throw fileNotFound();
    const source =
      request.version === current.version
        ? current
        : await findArchivedVersion(db, request.userId, current.id, request.version);
    if (!source) throw versionNotFound(request.version);
    const file = await replaceCurrentVersion(db, request.userId, current, {
      content: source.content,
      tags: source.tags,
      metadata: source.metadata,
    });
    return { file: toInfo(file) };
  });
}
