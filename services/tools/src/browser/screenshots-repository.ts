import type { Queryable } from '@jarvis/db';

// Screenshots the browser took (tools.screenshots). Read back only by their owner: every read
// names the user, so one user's id guessed or leaked does not show another's page.

export type NewScreenshot = {
  id: string;
  userId: string;
  runId?: string;
  conversationId?: string;
  url: string;
  png: Buffer;
  width: number;
  height: number;
};

export async function insertScreenshot(db: Queryable, screenshot: NewScreenshot): Promise<void> {
  await db.query(
    `INSERT INTO tools.screenshots (id, user_id, run_id, conversation_id, url, png, width, height)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      screenshot.id,
      screenshot.userId,
      screenshot.runId ?? null,
      screenshot.conversationId ?? null,
      screenshot.url,
      screenshot.png,
      screenshot.width,
      screenshot.height,
    ],
  );
}

// The PNG of one of the user's screenshots; undefined when there is none by that id for them
// (never taken, another user's, or pruned).
export async function getScreenshotPng(
  db: Queryable,
  userId: string,
  id: string,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ png: Buffer }>(
    'SELECT png FROM tools.screenshots WHERE id = $1 AND user_id = $2',
    [id, userId],
  );
  return rows[0]?.png;
}

// Deletes screenshots taken before `before`; answers how many went.
export async function pruneScreenshots(db: Queryable, before: Date): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM tools.screenshots WHERE created_at < $1', [
    before,
  ]);
  return rowCount ?? 0;
}
