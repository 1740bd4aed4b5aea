import type { Queryable } from '@jarvis/db';

// The user's standing instructions, or undefined before they write any.
export async function findInstructions(db: Queryable, userId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ text: string }>(
    'SELECT text FROM memory.instructions WHERE user_id = $1',
    [userId],
  );
  return rows[0]?.text;
}

export async function saveInstructions(db: Queryable, userId: string, text: string): Promise<void> {
  await db.query(
    `INSERT INTO memory.instructions (user_id, text, updated_at) VALUES ($1, $2, now())
     ON CONFLICT (user_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at`,
    [userId, text],
  );
}
