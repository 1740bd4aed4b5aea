import type { WorkspaceFile, WorkspaceKind } from '@jarvis/contracts';
import { type Pool, type Queryable, withTransaction } from '@jarvis/db';

// The files of conversations' and missions' workspaces (tools.workspace_files). Every statement
// names the user: another user's workspace id, guessed or leaked, reads as an empty workspace.

export type Workspace = { kind: WorkspaceKind; id: string };

// Files one workspace may hold: its listing is one NATS reply (1 MiB by default), which this many
// entries with names of ordinary length fill to about a tenth.
export const WORKSPACE_MAX_FILES = 1_000;

export type NewWorkspaceFile = { path: string; content: Buffer; mediaType: string };

export type StoredWorkspaceFile = { content: Buffer; size: number; mediaType: string };

type FileRow = { path: string; size: number; media_type: string; updated_at: Date };

function toWorkspaceFile(row: FileRow): WorkspaceFile {
  return {
    path: row.path,
    size: row.size,
    mediaType: row.media_type,
    updatedAt: row.updated_at.toISOString(),
  };
}

// The workspace's files without their bytes, by path.
export async function listWorkspaceFiles(
  db: Queryable,
  userId: string,
  workspace: Workspace,
): Promise<WorkspaceFile[]> {
  const { rows } = await db.query<FileRow>(
    `SELECT path, size, media_type, updated_at FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3
     ORDER BY path COLLATE "C"`,
    [userId, workspace.kind, workspace.id],
  );
  return rows.map(toWorkspaceFile);
}

// One file with its bytes; undefined when the user has none at that path.
export async function readWorkspaceFile(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  path: string,
): Promise<StoredWorkspaceFile | undefined> {
  const { rows } = await db.query<{ content: Buffer; size: number; media_type: string }>(
    `SELECT content, size, media_type FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3 AND path = $4`,
    [userId, workspace.kind, workspace.id, path],
  );
  const row = rows[0];
  return row && { content: row.content, size: row.size, mediaType: row.media_type };
}

export type WorkspaceFilePosition = { kind: WorkspaceKind; id: string; path: string };

export type ExportedWorkspaceFileRow = WorkspaceFilePosition &
  WorkspaceFile & {
    // The bytes when the file is at most the inline size asked for; a larger one's are read alone.
    content?: Buffer;
  };

// Up to `limit` of the user's files of every workspace, by kind, id and path, after `after`: an
// export's page. Only files up to `inlineMaxBytes` come with their bytes, so a page of many large
// files never holds them all.
export async function listWorkspaceFilesAfter(
  db: Queryable,
  userId: string,
  options: { after?: WorkspaceFilePosition; limit: number; inlineMaxBytes: number },
): Promise<ExportedWorkspaceFileRow[]> {
  const { after, limit, inlineMaxBytes } = options;
  const { rows } = await db.query<
    FileRow & { kind: WorkspaceKind; owner_id: string; content: Buffer | null }
  >(
    `SELECT kind, owner_id, path, size, media_type, updated_at,
            CASE WHEN size <= $2 THEN content END AS content
     FROM tools.workspace_files
     WHERE user_id = $1 AND ($3::text IS NULL OR (kind, owner_id, path) > ($3, $4::uuid, $5))
     ORDER BY kind, owner_id, path
     LIMIT $6`,
    [userId, inlineMaxBytes, after?.kind ?? null, after?.id ?? null, after?.path ?? null, limit],
  );
  return rows.map((row) => ({
    ...toWorkspaceFile(row),
    kind: row.kind,
    id: row.owner_id,
    ...(row.content === null ? {} : { content: row.content }),
  }));
}

// Bytes of all of the user's workspaces together: what the quota counts.
export async function workspaceUsage(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ used: string }>(
    'SELECT coalesce(sum(size), 0) AS used FROM tools.workspace_files WHERE user_id = $1',
    [userId],
  );
  return Number(rows[0]?.used ?? 0);
}

// Held until the transaction ends: one user's writes (uploads, runs writing back) take turns, so
// two of them cannot both pass the quota check on the same free space.
export async function lockUserWorkspaces(db: Queryable, userId: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtext('tools.workspaces:' || $1))", [userId]);
}

// A stored file that `path` cannot sit beside on a file system: one at a folder of `path`
// ('a' for 'a/b'), or one inside `path` as a folder ('a/b' for 'a'). undefined when none.
export async function conflictingWorkspacePath(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  path: string,
): Promise<string | undefined> {
  const segments = path.split('/');
  const folders = segments.slice(1).map((_, index) => segments.slice(0, index + 1).join('/'));
  const { rows } = await db.query<{ path: string }>(
    `SELECT path FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3
       AND (path = ANY($4::text[]) OR starts_with(path, $5))
     LIMIT 1`,
    [userId, workspace.kind, workspace.id, folders, `${path}/`],
  );
  return rows[0]?.path;
}

// Writes the file, replacing one at that path. No quota check: callers hold the user's lock and
// check first (storeWorkspaceFile, the write-back after a run).
export async function writeWorkspaceFile(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  file: NewWorkspaceFile,
): Promise<WorkspaceFile> {
  const { rows } = await db.query<FileRow>(
    `INSERT INTO tools.workspace_files (user_id, kind, owner_id, path, content, size, media_type)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (user_id, kind, owner_id, path) DO UPDATE
       SET content = excluded.content, size = excluded.size, media_type = excluded.media_type,
           updated_at = now()
     RETURNING path, size, media_type, updated_at`,
    [
      userId,
      workspace.kind,
      workspace.id,
      file.path,
      file.content,
      file.content.byteLength,
      file.mediaType,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('the workspace file was not written');
  return toWorkspaceFile(row);
}

// Answers whether there was a file to delete.
export async function deleteWorkspaceFile(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  path: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3 AND path = $4`,
    [userId, workspace.kind, workspace.id, path],
  );
  return (rowCount ?? 0) > 0;
}

export type StoreOutcome =
  | { outcome: 'stored'; file: WorkspaceFile; isCreated: boolean }
  | { outcome: 'over_quota'; usedBytes: number }
  | { outcome: 'too_many_files' }
  | { outcome: 'conflict'; path: string };

// One file written if the user's quota has room for it (the file it replaces no longer counts),
// a new one only below WORKSPACE_MAX_FILES, and no stored file stands in its way as a folder or
// inside it as one.
export async function storeWorkspaceFile(
  pool: Pool,
  userId: string,
  workspace: Workspace,
  file: NewWorkspaceFile,
  quotaBytes: number,
): Promise<StoreOutcome> {
  return withTransaction(pool, async (db) => {
    await lockUserWorkspaces(db, userId);
    const conflict = await conflictingWorkspacePath(db, userId, workspace, file.path);
    if (conflict !== undefined) return { outcome: 'conflict', path: conflict };
    const usedBytes = await workspaceUsage(db, userId);
    const replacedBytes = await storedSize(db, userId, workspace, file.path);
    if (usedBytes - (replacedBytes ?? 0) + file.content.byteLength > quotaBytes) {
      return { outcome: 'over_quota', usedBytes };
    }
    if (
      replacedBytes === undefined &&
      (await countWorkspaceFiles(db, userId, workspace)) >= WORKSPACE_MAX_FILES
    ) {
      return { outcome: 'too_many_files' };
    }
    const stored = await writeWorkspaceFile(db, userId, workspace, file);
    return { outcome: 'stored', file: stored, isCreated: replacedBytes === undefined };
  });
}

async function countWorkspaceFiles(
  db: Queryable,
  userId: string,
  workspace: Workspace,
): Promise<number> {
  const { rows } = await db.query<{ files: number }>(
    `SELECT count(*)::int AS files FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3`,
    [userId, workspace.kind, workspace.id],
  );
  return rows[0]?.files ?? 0;
}

async function storedSize(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  path: string,
): Promise<number | undefined> {
  const { rows } = await db.query<{ size: number }>(
    `SELECT size FROM tools.workspace_files
     WHERE user_id = $1 AND kind = $2 AND owner_id = $3 AND path = $4`,
    [userId, workspace.kind, workspace.id, path],
  );
  return rows[0]?.size;
}
