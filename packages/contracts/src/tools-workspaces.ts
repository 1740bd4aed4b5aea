import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// The files of a conversation's or a mission's workspace: run_code sees them at /workspace, the
// tools service keeps them, and the gateway lists, serves, takes and deletes them for
// /v1/workspaces/{kind}/{id}/files. File bodies travel in the uploads bucket (UPLOADS_BUCKET),
// never in a message: they are larger than one NATS message may be.

export const WorkspaceKind = z.enum(['conversation', 'mission']);
export type WorkspaceKind = z.infer<typeof WorkspaceKind>;

const WORKSPACE_PATH_MAX_CHARS = 512;
const WORKSPACE_PATH_MAX_SEGMENTS = 16;
// Counted in UTF-8 bytes, not characters: a file name longer than 255 bytes cannot be created on
// the run directory's file system, so such a file could be stored but never given to a run.
const WORKSPACE_SEGMENT_MAX_BYTES = 255;

// Half a UTF-16 surrogate pair: no UTF-8 spelling, so Postgres refuses it and encodeURIComponent
// throws on it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const utf8 = new TextEncoder();

// C0 and C1 controls and DEL: they would hide in a listing, a terminal or a header.
function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

function isWorkspaceSegment(segment: string): boolean {
  return (
    segment.length > 0 &&
    segment !== '.' &&
    segment !== '..' &&
    utf8.encode(segment).length <= WORKSPACE_SEGMENT_MAX_BYTES
  );
}

// A relative path inside a workspace: '/'-separated, 1–512 characters, at most 16 segments, each
// 1–255 bytes, none '.' or '..', no leading '/', no backslash, no control characters. Everything
// that joins it to a directory (the run's materialisation, the write-back) relies on this alone
// to stay inside the workspace.
export function isWorkspacePath(path: string): boolean {
  if (path.length === 0 || path.length > WORKSPACE_PATH_MAX_CHARS) return false;
  if (path.includes('\\') || hasControlCharacter(path) || LONE_SURROGATE.test(path)) {
    return false;
  }
  const segments = path.split('/');
  return segments.length <= WORKSPACE_PATH_MAX_SEGMENTS && segments.every(isWorkspaceSegment);
}

export const WorkspacePath = z
  .string()
  .min(1)
  .max(WORKSPACE_PATH_MAX_CHARS)
  .refine(isWorkspacePath, {
    message:
      "must be a relative path of 1-16 '/'-separated names (no '.', '..', empty name, backslash or control character)",
  });

export const WorkspaceFile = z.object({
  path: WorkspacePath,
  size: z.number().int().min(0),
  mediaType: z.string(),
  // ISO 8601, when the file was last written.
  updatedAt: z.iso.datetime({ offset: true }),
});
export type WorkspaceFile = z.infer<typeof WorkspaceFile>;

const WORKSPACE_FILES_PREFIX = '/v1/workspaces';

// The gateway's address of a workspace file, relative to the API's origin. Each segment is
// percent-encoded on its own, so a '/' stays a separator and nothing else in a name is one.
export function workspaceFileUrl(kind: WorkspaceKind, id: string, path: string): string {
  const encodedPath = path.split('/').map(encodeURIComponent).join('/');
  return `${WORKSPACE_FILES_PREFIX}/${kind}/${id}/files/${encodedPath}`;
}

// A file a tool result names (run_code's `files`): `url` only when the workspace is kept.
export const ToolFile = z.object({
  path: z.string(),
  size: z.number().int().min(0),
  mediaType: z.string(),
  url: z.string().optional(),
});
export type ToolFile = z.infer<typeof ToolFile>;

const WORKSPACE_FILE_URL = /^\/v1\/workspaces\/([^/]+)\/([^/]+)\/files\//;

// Whether `url` is the API's own address of the file at `path` in some workspace, spelled exactly
// as workspaceFileUrl spells it: no other origin, no other endpoint, no '..' or encoded '/'.
function isOwnWorkspaceFileUrl(url: string, path: string): boolean {
  const match = WORKSPACE_FILE_URL.exec(url);
  if (!match || !isWorkspacePath(path)) return false;
  const kind = WorkspaceKind.safeParse(match[1]);
  const id = Id.safeParse(match[2]);
  return kind.success && id.success && url === workspaceFileUrl(kind.data, id.data, path);
}

function toToolFile(entry: unknown): ToolFile | undefined {
  const parsed = ToolFile.safeParse(entry);
  if (!parsed.success) return undefined;
  const { url, ...file } = parsed.data;
  if (url === undefined) return file;
  return isOwnWorkspaceFileUrl(url, file.path) ? { ...file, url } : undefined;
}

// The files a tool result carries (run_code's `files`), as the orchestrator passes them on to the
// chat and the run view. Those views fetch `url` with the user's key, so a file whose url is not
// one of the API's own workspace file addresses for that very path is left out (as screenshotOf
// does for screenshots). A file without a url (a workspace that was not kept) stays: it can be
// named though not fetched. undefined when the result carries none.
export function toolFilesOf(result: unknown): ToolFile[] | undefined {
  if (typeof result !== 'object' || result === null || !('files' in result)) return undefined;
  if (!Array.isArray(result.files)) return undefined;
  const files = result.files.map(toToolFile).filter((file) => file !== undefined);
  return files.length > 0 ? files : undefined;
}

// The name of an object in the uploads bucket carrying a file's bytes: the sender puts it, the
// receiver reads and deletes it.
const WorkspaceBlobName = z.string().min(1).max(100);

// A fresh name for such an object, `workspace-<uuid>`.
export function newWorkspaceBlobName(): string {
  return `workspace-${crypto.randomUUID()}`;
}

// A workspace of one user. Another user's workspace looks empty, and its files are not_found.
const WorkspaceRef = z.object({ userId: Id, kind: WorkspaceKind, id: Id });

// tools.workspaces.list: the workspace's files (an empty list when it has none), and the user's
// use of their quota across all their workspaces.
export const ToolsWorkspacesListRequest = WorkspaceRef;
export type ToolsWorkspacesListRequest = z.infer<typeof ToolsWorkspacesListRequest>;

export const ToolsWorkspacesListResponse = z.object({
  files: z.array(WorkspaceFile),
  usedBytes: z.number().int().min(0),
  quotaBytes: z.number().int().min(0),
});
export type ToolsWorkspacesListResponse = z.infer<typeof ToolsWorkspacesListResponse>;

export const toolsWorkspacesList = defineRpc(
  'tools.workspaces.list',
  ToolsWorkspacesListRequest,
  ToolsWorkspacesListResponse,
);

// tools.workspaces.get: the tools service puts the file's bytes in the uploads bucket as `blob`;
// the caller reads and deletes it. not_found when there is no such file.
export const ToolsWorkspacesGetRequest = WorkspaceRef.extend({ path: WorkspacePath });
export type ToolsWorkspacesGetRequest = z.infer<typeof ToolsWorkspacesGetRequest>;

export const ToolsWorkspacesGetResponse = z.object({
  blob: WorkspaceBlobName,
  size: z.number().int().min(0),
  mediaType: z.string(),
});
export type ToolsWorkspacesGetResponse = z.infer<typeof ToolsWorkspacesGetResponse>;

export const toolsWorkspacesGet = defineRpc(
  'tools.workspaces.get',
  ToolsWorkspacesGetRequest,
  ToolsWorkspacesGetResponse,
);

// tools.workspaces.put: stores the bytes of `blob` (which the caller put in the uploads bucket and
// deletes afterwards) at `path`, replacing the file there if there is one. `mediaType` is what the
// client declared, left out when it declared nothing specific; then the name's extension decides.
// payload_too_large past WORKSPACE_FILE_MAX_MB or the user's quota; bad_request on a bad path;
// not_found when the blob is gone.
export const ToolsWorkspacesPutRequest = WorkspaceRef.extend({
  path: WorkspacePath,
  blob: WorkspaceBlobName,
  mediaType: z.string().min(1).max(255).optional(),
});
export type ToolsWorkspacesPutRequest = z.infer<typeof ToolsWorkspacesPutRequest>;

export const ToolsWorkspacesPutResponse = z.object({
  file: WorkspaceFile,
  // false when it replaced a file already at that path (the API answers 200 rather than 201).
  created: z.boolean(),
});
export type ToolsWorkspacesPutResponse = z.infer<typeof ToolsWorkspacesPutResponse>;

export const toolsWorkspacesPut = defineRpc(
  'tools.workspaces.put',
  ToolsWorkspacesPutRequest,
  ToolsWorkspacesPutResponse,
);

// tools.workspaces.delete: not_found when there is no such file.
export const ToolsWorkspacesDeleteRequest = WorkspaceRef.extend({ path: WorkspacePath });
export type ToolsWorkspacesDeleteRequest = z.infer<typeof ToolsWorkspacesDeleteRequest>;

export const ToolsWorkspacesDeleteResponse = z.object({});
export type ToolsWorkspacesDeleteResponse = z.infer<typeof ToolsWorkspacesDeleteResponse>;

export const toolsWorkspacesDelete = defineRpc(
  'tools.workspaces.delete',
  ToolsWorkspacesDeleteRequest,
  ToolsWorkspacesDeleteResponse,
);

// The path of /v1/workspaces/{kind}/{id}/files.
export const WorkspaceParams = z.strictObject({ kind: WorkspaceKind, id: Id });

// The path of /v1/workspaces/{kind}/{id}/files/{path}. `path` spans several segments of the URL
// (its '/'s are the URL's own), each percent-encoded: an encoded '/' (%2F) is refused, as it
// would otherwise name another file than the segments say.
export const WorkspaceFileParams = WorkspaceParams.extend({
  path: WorkspacePath.meta({
    description:
      "The file's path in the workspace: names separated by '/' (sent as '/', not %2F), each " +
      "percent-encoded; no '.', '..' or empty name.",
  }),
});

// PUT /v1/workspaces/{kind}/{id}/files/{path}'s answer.
export const WorkspaceFilePutResponse = z.object({ file: WorkspaceFile });
export type WorkspaceFilePutResponse = z.infer<typeof WorkspaceFilePutResponse>;

// Where the next page of a workspace export starts; only the tools service reads it.
const WorkspaceExportCursor = z.string().min(1).max(2_000);

const WorkspaceExportFileInfo = z.object({
  kind: WorkspaceKind,
  id: Id,
  path: WorkspacePath,
  mediaType: z.string(),
  size: z.number().int().min(0),
  updatedAt: z.iso.datetime({ offset: true }),
});

// A small file's bytes come inline, base64; a larger one's in the uploads bucket as `blob`, which
// the caller reads and deletes.
export const WorkspaceExportFile = z.union([
  WorkspaceExportFileInfo.extend({ content: z.base64() }),
  WorkspaceExportFileInfo.extend({ blob: WorkspaceBlobName }),
]);
export type WorkspaceExportFile = z.infer<typeof WorkspaceExportFile>;

// tools.workspaces.exportPage: the user's files of every workspace, by kind, id and path, from
// after the cursor, bytes included: what the memory export adds after the memory's records. A
// page stays well under one NATS message and carries at most one file by blob, so the caller
// holds one large file at a time. `next` is absent on the last page.
export const ToolsWorkspacesExportPageRequest = z.object({
  userId: Id,
  after: WorkspaceExportCursor.optional(),
});
export type ToolsWorkspacesExportPageRequest = z.infer<typeof ToolsWorkspacesExportPageRequest>;

export const ToolsWorkspacesExportPageResponse = z.object({
  files: z.array(WorkspaceExportFile),
  next: WorkspaceExportCursor.optional(),
});
export type ToolsWorkspacesExportPageResponse = z.infer<typeof ToolsWorkspacesExportPageResponse>;

export const toolsWorkspacesExportPage = defineRpc(
  'tools.workspaces.exportPage',
  ToolsWorkspacesExportPageRequest,
  ToolsWorkspacesExportPageResponse,
);
