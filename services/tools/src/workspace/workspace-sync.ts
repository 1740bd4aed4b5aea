import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isWorkspacePath, type WorkspaceFile } from '@jarvis/contracts';
import { type Pool, type Queryable, withTransaction } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import { lookup } from 'mime-types';
import {
  conflictingWorkspacePath,
  deleteWorkspaceFile,
  listWorkspaceFiles,
  lockUserWorkspaces,
  readWorkspaceFile,
  WORKSPACE_MAX_FILES,
  type Workspace,
  workspaceUsage,
  writeWorkspaceFile,
} from './workspace-repository';

// A workspace's files copied into a run's directory before the run, and what the run changed
// there copied back after it. The run directory is the box's /workspace: everything in it was
// written by untrusted code, so reading it back trusts nothing but regular files found without
// following a link, at a name isWorkspacePath accepts.

export type WorkspaceLimits = {
  // One file (WORKSPACE_FILE_MAX_MB); a larger one a run writes is not kept.
  fileMaxBytes: number;
  // All of one user's workspace files (WORKSPACE_QUOTA_MB).
  quotaBytes: number;
};

// Each file given to the run, by path, as it was given: a file the same afterwards is unchanged.
export type Materialised = Map<string, { size: number; sha256: string }>;

// A file the run left that is new or changed.
export type ProducedFile = { path: string; size: number; mediaType: string };

// Something the run left in /workspace that was not kept, and why (in words for the model).
export type NotKept = { path: string; reason: string };

export type WriteBack = { files: WorkspaceFile[]; notKept: NotKept[]; deleted: string[] };

// Entries (files, folders, links) of a run's /workspace looked at after the run; past it the rest
// is not kept. Bounds the time one run's write-back can take, whatever it creates; room for a
// full workspace (WORKSPACE_MAX_FILES) in folders.
const MAX_WORKSPACE_ENTRIES = 2_000;

export function mediaTypeOf(path: string): string {
  return lookup(path) || 'application/octet-stream';
}

function sha256(content: Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

// Copies the workspace's stored files into `dir` (the run's /workspace), one at a time so a large
// workspace is never in memory at once.
export async function materialiseWorkspace(
  pool: Pool,
  userId: string,
  workspace: Workspace,
  dir: string,
  logger: Logger,
): Promise<Materialised> {
  const materialised: Materialised = new Map();
  for (const { path } of await listWorkspaceFiles(pool, userId, workspace)) {
    const stored = await readWorkspaceFile(pool, userId, workspace, path);
    // Deleted since the listing.
    if (!stored) continue;
    if (!(await placeFile(dir, path, stored.content))) {
      logger.warn({ workspace, path }, 'a workspace file could not be given to a run');
      continue;
    }
    materialised.set(path, { size: stored.size, sha256: sha256(stored.content) });
  }
  return materialised;
}

// Writes one file into a run directory before the run; false when its path cannot be made there
// (a file where another one's folder would be). 'replace' overwrites a file this service put
// there itself: before the run, nothing else has written to the directory.
export async function placeFile(
  dir: string,
  path: string,
  content: Uint8Array,
  mode: 'new' | 'replace' = 'new',
): Promise<boolean> {
  // isWorkspacePath is what keeps the join inside `dir`: no '..', no absolute path.
  if (!isWorkspacePath(path)) return false;
  const target = join(dir, path);
  try {
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content, { flag: mode === 'new' ? 'wx' : 'w' });
    return true;
  } catch (error) {
    if (isFileSystemClash(error)) return false;
    throw error;
  }
}

function errorCode(error: unknown): unknown {
  return error instanceof Error && 'code' in error ? error.code : undefined;
}

function isFileSystemClash(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR';
}

function isPermissionDenied(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'EACCES' || code === 'EPERM';
}

// A regular file found after the run: only its name and size, read later one at a time.
type FoundFile = { path: string; hostPath: string; size: number; stats: Stats };

type Walk = {
  files: FoundFile[];
  notKept: NotKept[];
  entries: number;
  // Whether MAX_WORKSPACE_ENTRIES stopped the walk before it saw everything.
  isCut: boolean;
};

// Every regular file under `dir`, by lstat: a link is reported and never followed, a folder is
// descended into, anything else (a FIFO, a socket, a device) is reported. Nothing runs in the box
// any more when this is called (its PID namespace died with it), so nothing can swap an entry
// between the look and the read; the read checks again anyway.
async function findWorkspaceFiles(dir: string): Promise<Walk> {
  const walk: Walk = { files: [], notKept: [], entries: 0, isCut: false };
  await walkFolder(dir, '', walk);
  walk.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return walk;
}

async function walkFolder(hostDir: string, prefix: string, walk: Walk): Promise<void> {
  let names: Buffer[];
  try {
    names = await readdir(hostDir, { encoding: 'buffer' });
  } catch (error) {
    // A folder the code took its own permissions from (the service, unless it is root, is the
    // box's user on the host): its files are not looked for, and never chmod'ed by the service.
    if (!isPermissionDenied(error)) throw error;
    walk.notKept.push({ path: prefix, reason: 'a folder the code made unreadable' });
    return;
  }
  for (const rawName of names) {
    const name = rawName.toString('utf8');
    const path = prefix === '' ? name : `${prefix}/${name}`;
    walk.entries += 1;
    if (walk.entries > MAX_WORKSPACE_ENTRIES) {
      if (!walk.isCut) {
        walk.isCut = true;
        walk.notKept.push({
          path,
          reason: `more than ${MAX_WORKSPACE_ENTRIES} files and folders: this and the rest are not kept`,
        });
      }
      return;
    }
    if (!Buffer.from(name, 'utf8').equals(rawName)) {
      walk.notKept.push({ path, reason: 'the name is not valid UTF-8' });
      continue;
    }
    if (!isWorkspacePath(path)) {
      walk.notKept.push({
        path,
        reason: 'the path is not allowed (more than 16 levels, too long, or odd characters)',
      });
      continue;
    }
    const hostPath = join(hostDir, name);
    const stats = await lstat(hostPath);
    if (stats.isDirectory()) await walkFolder(hostPath, path, walk);
    else if (stats.isFile()) walk.files.push({ path, hostPath, size: stats.size, stats });
    else if (stats.isSymbolicLink()) {
      walk.notKept.push({ path, reason: 'a symbolic link: only regular files are kept' });
    } else walk.notKept.push({ path, reason: 'not a regular file' });
  }
}

// Asked of a file given to the run that the walk did not reach (past its limit) before it counts
// as deleted: each folder on the way is looked at too, so that no link is followed.
async function isRegularFile(dir: string, path: string): Promise<boolean> {
  const segments = path.split('/');
  try {
    for (let index = 1; index < segments.length; index += 1) {
      const folder = await lstat(join(dir, ...segments.slice(0, index)));
      if (!folder.isDirectory()) return false;
    }
    return (await lstat(join(dir, path))).isFile();
  } catch {
    return false;
  }
}

// The file's bytes, opened without following a link and checked to be the very file the walk
// saw (it cannot be another, with the box gone, but this is the last guard); else why not.
async function readFound(file: FoundFile): Promise<Buffer | { reason: string }> {
  let handle: FileHandle;
  try {
    // O_NONBLOCK: a FIFO put in the file's place would otherwise block the open.
    handle = await open(
      file.hostPath,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (error) {
    if (isPermissionDenied(error)) return { reason: 'a file the code made unreadable' };
    return { reason: 'not a regular file' };
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.ino !== file.stats.ino || stats.dev !== file.stats.dev) {
      return { reason: 'not a regular file' };
    }
    const content = Buffer.alloc(stats.size);
    let offset = 0;
    while (offset < content.byteLength) {
      const { bytesRead } = await handle.read(content, offset, content.byteLength - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return content.subarray(0, offset);
  } finally {
    await handle.close();
  }
}

// What the run left in a /workspace that is not kept (a call outside any conversation): the files
// it made, named, their bytes not read.
export async function listProducedFiles(
  dir: string,
): Promise<{ files: ProducedFile[]; notKept: NotKept[] }> {
  const walk = await findWorkspaceFiles(dir);
  return {
    files: walk.files.map(({ path, size }) => ({ path, size, mediaType: mediaTypeOf(path) })),
    notKept: walk.notKept,
  };
}

// Stores what the run changed in its /workspace: new and modified regular files (within the file
// limit and the user's quota, in path order), and deletes the files it was given that are gone.
// Files the same as they were given are not written again and not listed.
export async function writeBackWorkspace(
  pool: Pool,
  userId: string,
  workspace: Workspace,
  dir: string,
  materialised: Materialised,
  limits: WorkspaceLimits,
): Promise<WriteBack> {
  const walk = await findWorkspaceFiles(dir);
  return withTransaction(pool, async (db) => {
    await lockUserWorkspaces(db, userId);
    const result: WriteBack = { files: [], notKept: walk.notKept, deleted: [] };
    const stored = new Map(
      (await listWorkspaceFiles(db, userId, workspace)).map((file) => [file.path, file.size]),
    );
    let usedBytes = await workspaceUsage(db, userId);
    const found = new Set(walk.files.map((file) => file.path));
    for (const path of materialised.keys()) {
      if (found.has(path) || (walk.isCut && (await isRegularFile(dir, path)))) continue;
      if (await deleteWorkspaceFile(db, userId, workspace, path)) {
        usedBytes -= stored.get(path) ?? 0;
        stored.delete(path);
        result.deleted.push(path);
      }
    }
    for (const file of walk.files) {
      const kept = await keepFile(db, { userId, workspace, limits }, file, {
        materialised,
        stored,
        usedBytes,
      });
      if (kept.outcome === 'not_kept')
        result.notKept.push({ path: file.path, reason: kept.reason });
      if (kept.outcome === 'kept') {
        result.files.push(kept.file);
        usedBytes += kept.file.size - (stored.get(file.path) ?? 0);
        stored.set(file.path, kept.file.size);
      }
    }
    return result;
  });
}

type KeepScope = { userId: string; workspace: Workspace; limits: WorkspaceLimits };

type KeepState = {
  materialised: Materialised;
  // Sizes of the workspace's stored files, by path.
  stored: Map<string, number>;
  usedBytes: number;
};

type KeepOutcome =
  | { outcome: 'kept'; file: WorkspaceFile }
  | { outcome: 'unchanged' }
  | { outcome: 'not_kept'; reason: string };

async function keepFile(
  db: Queryable,
  scope: KeepScope,
  file: FoundFile,
  state: KeepState,
): Promise<KeepOutcome> {
  const { userId, workspace, limits } = scope;
  if (file.size > limits.fileMaxBytes) {
    return {
      outcome: 'not_kept',
      reason: `larger than the limit of ${formatBytes(limits.fileMaxBytes)} for one file`,
    };
  }
  const content = await readFound(file);
  if (!Buffer.isBuffer(content)) return { outcome: 'not_kept', reason: content.reason };
  const given = state.materialised.get(file.path);
  if (given && given.size === content.byteLength && given.sha256 === sha256(content)) {
    return { outcome: 'unchanged' };
  }
  const conflict = await conflictingWorkspacePath(db, userId, workspace, file.path);
  if (conflict !== undefined) {
    return { outcome: 'not_kept', reason: `the workspace has a file at ${conflict} in its way` };
  }
  if (!state.stored.has(file.path) && state.stored.size >= WORKSPACE_MAX_FILES) {
    return {
      outcome: 'not_kept',
      reason: `the workspace holds ${WORKSPACE_MAX_FILES} files, the most it may`,
    };
  }
  const replacedBytes = state.stored.get(file.path) ?? 0;
  if (state.usedBytes - replacedBytes + content.byteLength > limits.quotaBytes) {
    return {
      outcome: 'not_kept',
      reason: `the user's workspace quota of ${formatBytes(limits.quotaBytes)} is full`,
    };
  }
  const written = await writeWorkspaceFile(db, userId, workspace, {
    path: file.path,
    content,
    mediaType: mediaTypeOf(file.path),
  });
  return { outcome: 'kept', file: written };
}

function formatBytes(bytes: number): string {
  const mib = bytes / 1_048_576;
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
