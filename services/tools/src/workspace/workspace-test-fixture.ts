import type { Queryable } from '@jarvis/db';
import type { Workspace } from './workspace-repository';

// Fills a workspace with `count` one-byte files, file-0000 on, in one statement: a full workspace
// for the tests of its file limit, without a thousand round trips.
export async function fillWorkspace(
  db: Queryable,
  userId: string,
  workspace: Workspace,
  count: number,
): Promise<void> {
  await db.query(
    `INSERT INTO tools.workspace_files (user_id, kind, owner_id, path, content, size, media_type)
     SELECT $1, $2, $3, 'file-' || lpad(n::text, 4, '0'), '\x78'::bytea, 1, 'text/plain'
     FROM generate_series(0, $4 - 1) AS n`,
    [userId, workspace.kind, workspace.id, count],
  );
}
