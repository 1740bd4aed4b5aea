import type { ToolFile, WorkspaceKind } from '@jarvis/contracts';

// The addresses of workspace files, and the check that a tool result's file names one of them.
// Written here rather than imported from the contracts: their index would bring zod into the
// page's bundle. workspace-files.test.ts holds them to the contracts' workspaceFileUrl.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FILE_URL = /^\/v1\/workspaces\/(conversation|mission)\/([^/?#]+)\/files\/([^?#]+)$/;
// Half a UTF-16 surrogate pair, on which encodeURIComponent throws.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_PATH_CHARS = 512;
const MAX_SEGMENTS = 16;
const MAX_SEGMENT_BYTES = 255;
const utf8 = new TextEncoder();

// The only files shown inline: a browser decodes these as pictures and nothing else. SVG can
// hold script, so it is a download like any other file.
const INLINE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

export function workspaceFilesPath(kind: WorkspaceKind, id: string): string {
  return `/v1/workspaces/${kind}/${encodeURIComponent(id)}/files`;
}

export function workspaceFilePath(kind: WorkspaceKind, id: string, path: string): string {
  const segments = path.split('/').map(encodeURIComponent).join('/');
  return `${workspaceFilesPath(kind, id)}/${segments}`;
}

// C0 and C1 controls and DEL: never in a workspace path.
function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

function isSegment(segment: string): boolean {
  return (
    segment.length > 0 &&
    segment !== '.' &&
    segment !== '..' &&
    utf8.encode(segment).length <= MAX_SEGMENT_BYTES
  );
}

// The rule of the contracts' isWorkspacePath: the server refuses anything else.
export function isWorkspacePath(path: string): boolean {
  if (path.length === 0 || path.length > MAX_PATH_CHARS) return false;
  if (path.includes('\\') || hasControlCharacter(path) || LONE_SURROGATE.test(path)) return false;
  const segments = path.split('/');
  return segments.length <= MAX_SEGMENTS && segments.every(isSegment);
}

// Whether `url` is exactly the API's own address of the file at `path`: it is fetched with the
// user's key, so anything else (another host, another endpoint, a `..` that the browser would
// resolve, even written as %2e%2e) must not pass.
export function isWorkspaceFileUrl(url: string, path: string): boolean {
  const match = FILE_URL.exec(url);
  if (!match?.[1] || !match[2]) return false;
  const kind = match[1] === 'mission' ? 'mission' : 'conversation';
  if (!UUID.test(match[2]) || !isWorkspacePath(path)) return false;
  return url === workspaceFilePath(kind, match[2], path);
}

function isSize(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function asToolFile(value: unknown): ToolFile | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (!('path' in value && 'size' in value && 'mediaType' in value)) return undefined;
  const { path, size, mediaType } = value;
  if (typeof path !== 'string' || typeof mediaType !== 'string' || !isSize(size)) return undefined;
  if (!('url' in value) || value.url === undefined) return { path, size, mediaType };
  // Left out, as the contracts' toolFilesOf does: a url that is not its own address.
  const { url } = value;
  return typeof url === 'string' && isWorkspaceFileUrl(url, path)
    ? { path, size, mediaType, url }
    : undefined;
}

// The files a tool step's output or a tool_finished event carries (JSON from the server),
// checked before anything is fetched for them. Undefined when there are none.
export function asToolFiles(value: unknown): ToolFile[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const files = value.map(asToolFile).filter((file) => file !== undefined);
  return files.length > 0 ? files : undefined;
}

export function isInlineImage(mediaType: string): boolean {
  const essence = mediaType.split(';')[0]?.trim().toLowerCase() ?? '';
  return INLINE_IMAGE_TYPES.has(essence);
}

// The name a download is saved under: the path's last segment.
export function fileNameOf(path: string): string {
  return path.split('/').at(-1) || path;
}
