import type { Queryable } from '@jarvis/db';

// The user's standing instructions, or undefined before they write any.
export async function findInstructions(db: Queryable, userId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ text: string }>(
    'SELECT text FROM memory.instructions WHERE user_id = $1',
    [userId],
  );
  return rows[0]?.text;
}

// `updatedAt` is now, but for an import, which keeps when the file's were written.
export async function saveInstructions(
  db: Queryable,
  userId: string,
  text: string,
  updatedAt?: string,
): Promise<void> {
  await db.query(
    `INSERT INTO memory.instructions (user_id, text, updated_at)
     VALUES ($1, $2, coalesce($3::timestamptz, now()))
     ON CONFLICT (user_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`,
    [userId, text, updatedAt ?? null],
  );
}
