import { z } from 'zod';
import { Id, PG_INTEGER_MAX } from './common';
import { defineRpc } from './define';
import { describeGrepRegexProblem } from './grep-regex';

// Memory files: a per-user virtual filesystem that holds the agent's episodic and procedural
// memory (`episodes/2026-11-21/run-1.md`, `procedures/deploy.md`) and that users browse too.

export const FILE_PATH_MAX_CHARS = 512;
export const FILE_SEGMENT_MAX_CHARS = 128;
export const FILE_CONTENT_MAX_CHARS = 1_000_000;
export const FILE_TAGS_MAX = 32;
export const FILE_TAG_MAX_CHARS = 64;
// Metadata rides along in every reply that carries the file; keep it small.
export const FILE_METADATA_MAX_CHARS = 16_000;
export const FILE_GREP_PATTERN_MAX_CHARS = 200;
export const FILE_GREP_MAX_MATCHES = 200;
// What one grep reads, in path order: the embedded Postgres runs every query through one queue
// and ignores timeouts, so a grep's cost must be bounded before it starts. The byte bound holds
// the largest file (FILE_CONTENT_MAX_CHARS of up to 4 bytes each), so every file can be read.
export const FILE_GREP_MAX_FILES = 1_000;
export const FILE_GREP_MAX_BYTES = 4_000_000;
// A matching line is cut to this length so 200 matches always fit in one NATS message.
export const FILE_GREP_LINE_MAX_CHARS = 500;
export const FILE_SEARCH_MAX_LIMIT = 50;
export const FILE_SEARCH_QUERY_MAX_CHARS = 1_000;
export const FILE_LIST_MAX = 1_000;
export const FILE_HISTORY_MAX = 500;

function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

function describePathProblem(path: string): string | undefined {
  if (path.length === 0) return 'must not be empty';
  if (path.length > FILE_PATH_MAX_CHARS) {
    return `must be at most ${FILE_PATH_MAX_CHARS} characters`;
  }
  if (path.includes('\\')) return 'must separate folders with /, not with backslashes';
  if (hasControlCharacter(path)) return 'must not contain control characters';
  for (const segment of path.split('/')) {
    if (segment === '') return 'must not contain empty segments (a double or trailing /)';
    if (segment === '.' || segment === '..') return 'must not contain . or .. segments';
    if (segment.length > FILE_SEGMENT_MAX_CHARS) {
      return `must not contain segments longer than ${FILE_SEGMENT_MAX_CHARS} characters`;
    }
  }
  return undefined;
}

function describePrefixProblem(prefix: string): string | undefined {
  if (prefix.length > FILE_PATH_MAX_CHARS) {
    return `must be at most ${FILE_PATH_MAX_CHARS} characters`;
  }
  // It could never match a path; refusing it also keeps parsing twice a no-op.
  if (prefix.startsWith('/')) return 'must not start with //';
  if (prefix.includes('\\')) return 'must separate folders with /, not with backslashes';
  if (hasControlCharacter(prefix)) return 'must not contain control characters';
  return undefined;
}

// Models often write absolute-looking paths, so one leading / is dropped: `/notes/a.md` and
// `notes/a.md` name the same file. Every other rule keeps a path a plain relative name that
// cannot escape or alias another one.
function relativeName(describeProblem: (name: string) => string | undefined) {
  return z.string().transform((value, context) => {
    const name = value.startsWith('/') ? value.slice(1) : value;
    const problem = describeProblem(name);
    if (problem) {
      context.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }
    return name;
  });
}

// The one path rule for every request that names a file.
export const FilePath = relativeName(describePathProblem);

// A plain string prefix (`notes/` or `episodes/2026-11`) for listing and grep. Empty means every
// file.
export const FilePrefix = relativeName(describePrefixProblem);

export const FileContent = z.string().max(FILE_CONTENT_MAX_CHARS);

export const FileTags = z
  .array(z.string().min(1).max(FILE_TAG_MAX_CHARS))
  .max(FILE_TAGS_MAX)
  .transform((tags) => [...new Set(tags)]);

export const FileMetadata = z
  .record(z.string(), z.unknown())
  .refine(
    (metadata) => JSON.stringify(metadata).length <= FILE_METADATA_MAX_CHARS,
    `must be at most ${FILE_METADATA_MAX_CHARS} characters as JSON`,
  );

const FileVersionNumber = z.number().int().min(1).max(PG_INTEGER_MAX);
const FileSearchLimit = z.number().int().min(1).max(FILE_SEARCH_MAX_LIMIT);
const Timestamp = z.iso.datetime({ offset: true });

// What a listing shows of a file. `size` is in bytes (UTF-8), like a filesystem's.
export const MemoryFileEntry = z.object({
  path: z.string(),
  version: FileVersionNumber,
  size: z.number().int().nonnegative(),
  tags: z.array(z.string()),
  updatedAt: Timestamp,
});
export type MemoryFileEntry = z.infer<typeof MemoryFileEntry>;

export const MemoryFileInfo = MemoryFileEntry.extend({
  metadata: z.record(z.string(), z.unknown()),
  createdAt: Timestamp,
});
export type MemoryFileInfo = z.infer<typeof MemoryFileInfo>;

export const MemoryFile = MemoryFileInfo.extend({ content: z.string() });
export type MemoryFile = z.infer<typeof MemoryFile>;

// The fields each subject takes besides the user, shared with the HTTP bodies below so the
// gateway and the memory service validate exactly the same thing.
const listFields = { prefix: FilePrefix.optional() };
const readFields = { path: FilePath, version: FileVersionNumber.optional() };
// Tags and metadata left out keep the current file's (empty for a new file).
const writeFields = {
  path: FilePath,
  content: FileContent,
  tags: FileTags.optional(),
  metadata: FileMetadata.optional(),
};
const editFields = {
  path: FilePath,
  old: z.string().min(1).max(FILE_CONTENT_MAX_CHARS),
  new: FileContent,
};
const grepFields = {
  pattern: z.string().min(1).max(FILE_GREP_PATTERN_MAX_CHARS),
  prefix: FilePrefix.optional(),
  // A Postgres (POSIX-style) regular expression instead of a substring, within the rules of
  // grep-regex.ts. Both ignore case.
  isRegex: z.boolean().default(false),
};

// Refused here, at the edge of both the gateway and the memory service, so that no regex the
// database cannot bound ever reaches it.
function refuseUnsafeRegex(
  grep: { pattern: string; isRegex: boolean },
  context: z.core.$RefinementCtx,
): void {
  if (!grep.isRegex) return;
  const problem = describeGrepRegexProblem(grep.pattern);
  if (problem) context.addIssue({ code: 'custom', path: ['pattern'], message: problem });
}
const searchFields = {
  query: z.string().trim().min(1, 'must not be empty').max(FILE_SEARCH_QUERY_MAX_CHARS),
  limit: FileSearchLimit.default(10),
};
const pathFields = { path: FilePath };
const restoreFields = { path: FilePath, version: FileVersionNumber };

// memory.files.ls: the user's live files under a prefix, sorted by path (code point order).
export const MemoryFilesListRequest = z.object({ userId: Id, ...listFields });
export type MemoryFilesListRequest = z.input<typeof MemoryFilesListRequest>;
export const MemoryFilesListResponse = z.object({
  files: z.array(MemoryFileEntry),
  // More than FILE_LIST_MAX files matched: narrow the prefix.
  isTruncated: z.boolean(),
});
export type MemoryFilesListResponse = z.infer<typeof MemoryFilesListResponse>;
export const memoryFilesList = defineRpc(
  'memory.files.ls',
  MemoryFilesListRequest,
  MemoryFilesListResponse,
);

// memory.files.read: the current file, or an earlier version of it.
export const MemoryFilesReadRequest = z.object({ userId: Id, ...readFields });
export type MemoryFilesReadRequest = z.input<typeof MemoryFilesReadRequest>;
export const MemoryFilesReadResponse = z.object({ file: MemoryFile });
export type MemoryFilesReadResponse = z.infer<typeof MemoryFilesReadResponse>;
export const memoryFilesRead = defineRpc(
  'memory.files.read',
  MemoryFilesReadRequest,
  MemoryFilesReadResponse,
);

// memory.files.write: creates the file or replaces its content as a new version.
export const MemoryFilesWriteRequest = z.object({ userId: Id, ...writeFields });
export type MemoryFilesWriteRequest = z.input<typeof MemoryFilesWriteRequest>;
// Without the content: the caller just sent it.
export const MemoryFilesWriteResponse = z.object({ file: MemoryFileInfo });
export type MemoryFilesWriteResponse = z.infer<typeof MemoryFilesWriteResponse>;
export const memoryFilesWrite = defineRpc(
  'memory.files.write',
  MemoryFilesWriteRequest,
  MemoryFilesWriteResponse,
);

// memory.files.edit: replaces `old`, which must occur exactly once, with `new`.
export const MemoryFilesEditRequest = z.object({ userId: Id, ...editFields });
export type MemoryFilesEditRequest = z.input<typeof MemoryFilesEditRequest>;
export const MemoryFilesEditResponse = z.object({ file: MemoryFileInfo });
export type MemoryFilesEditResponse = z.infer<typeof MemoryFilesEditResponse>;
export const memoryFilesEdit = defineRpc(
  'memory.files.edit',
  MemoryFilesEditRequest,
  MemoryFilesEditResponse,
);

// memory.files.grep: matching lines (numbered from 1) of the user's live files, by path.
export const MemoryFilesGrepRequest = z
  .object({ userId: Id, ...grepFields })
  .superRefine(refuseUnsafeRegex);
export type MemoryFilesGrepRequest = z.input<typeof MemoryFilesGrepRequest>;
export const FileGrepMatch = z.object({
  path: z.string(),
  line: z.number().int().min(1),
  text: z.string(),
});
export type FileGrepMatch = z.infer<typeof FileGrepMatch>;
export const MemoryFilesGrepResponse = z.object({
  matches: z.array(FileGrepMatch),
  // More than FILE_GREP_MAX_MATCHES lines matched, or the files under the prefix hold more than
  // one grep reads (FILE_GREP_MAX_FILES, FILE_GREP_MAX_BYTES): narrow the prefix.
  isTruncated: z.boolean(),
});
export type MemoryFilesGrepResponse = z.infer<typeof MemoryFilesGrepResponse>;
export const memoryFilesGrep = defineRpc(
  'memory.files.grep',
  MemoryFilesGrepRequest,
  MemoryFilesGrepResponse,
);

// memory.files.search: full-text search over paths and contents, best first.
export const MemoryFilesSearchRequest = z.object({ userId: Id, ...searchFields });
export type MemoryFilesSearchRequest = z.input<typeof MemoryFilesSearchRequest>;
export const FileSearchHit = z.object({
  path: z.string(),
  version: FileVersionNumber,
  rank: z.number(),
  // Matching fragments, matched words between ** **.
  snippet: z.string(),
  updatedAt: Timestamp,
});
export type FileSearchHit = z.infer<typeof FileSearchHit>;
export const MemoryFilesSearchResponse = z.object({ results: z.array(FileSearchHit) });
export type MemoryFilesSearchResponse = z.infer<typeof MemoryFilesSearchResponse>;
export const memoryFilesSearch = defineRpc(
  'memory.files.search',
  MemoryFilesSearchRequest,
  MemoryFilesSearchResponse,
);

// memory.files.delete: the path is free afterwards; the deleted file's versions are kept.
export const MemoryFilesDeleteRequest = z.object({ userId: Id, ...pathFields });
export type MemoryFilesDeleteRequest = z.input<typeof MemoryFilesDeleteRequest>;
export const MemoryFilesDeleteResponse = z.object({ path: z.string() });
export type MemoryFilesDeleteResponse = z.infer<typeof MemoryFilesDeleteResponse>;
export const memoryFilesDelete = defineRpc(
  'memory.files.delete',
  MemoryFilesDeleteRequest,
  MemoryFilesDeleteResponse,
);

// memory.files.history: the file's versions, newest (the current one) first.
export const MemoryFilesHistoryRequest = z.object({ userId: Id, ...pathFields });
export type MemoryFilesHistoryRequest = z.input<typeof MemoryFilesHistoryRequest>;
export const FileVersionEntry = z.object({
  version: FileVersionNumber,
  size: z.number().int().nonnegative(),
  tags: z.array(z.string()),
  // When this version was written.
  createdAt: Timestamp,
  isCurrent: z.boolean(),
});
export type FileVersionEntry = z.infer<typeof FileVersionEntry>;
export const MemoryFilesHistoryResponse = z.object({
  versions: z.array(FileVersionEntry),
  // More than FILE_HISTORY_MAX versions exist; the oldest are left out.
  isTruncated: z.boolean(),
});
export type MemoryFilesHistoryResponse = z.infer<typeof MemoryFilesHistoryResponse>;
export const memoryFilesHistory = defineRpc(
  'memory.files.history',
  MemoryFilesHistoryRequest,
  MemoryFilesHistoryResponse,
);

// memory.files.restore: writes an earlier version's content, tags and metadata as a new version.
export const MemoryFilesRestoreRequest = z.object({ userId: Id, ...restoreFields });
export type MemoryFilesRestoreRequest = z.input<typeof MemoryFilesRestoreRequest>;
export const MemoryFilesRestoreResponse = z.object({ file: MemoryFileInfo });
export type MemoryFilesRestoreResponse = z.infer<typeof MemoryFilesRestoreResponse>;
export const memoryFilesRestore = defineRpc(
  'memory.files.restore',
  MemoryFilesRestoreRequest,
  MemoryFilesRestoreResponse,
);

// HTTP under /v1/memory/files. The user comes from the API key, so none of these take one;
// query strings arrive as text and are coerced.

// GET /
export const FilesListQuery = z.object(listFields);
// GET /content?path=&version=
export const FileReadQuery = z.object({
  ...readFields,
  version: z.coerce.number().pipe(FileVersionNumber).optional(),
});
// PUT /content
export const FileWriteBody = z.strictObject(writeFields);
// PATCH /content
export const FileEditBody = z.strictObject(editFields);
// DELETE /content?path=, GET /history?path=
export const FilePathQuery = z.object(pathFields);
// POST /restore
export const FileRestoreBody = z.strictObject(restoreFields);
// GET /grep?pattern=&prefix=&isRegex=
export const FilesGrepQuery = z
  .object({
    ...grepFields,
    isRegex: z.stringbool().default(false),
  })
  .superRefine(refuseUnsafeRegex);
// GET /search?q=&limit=
export const FilesSearchQuery = z.object({
  q: searchFields.query,
  limit: z.coerce.number().pipe(FileSearchLimit).optional(),
});
