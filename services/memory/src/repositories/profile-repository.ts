import type { Queryable } from '@jarvis/db';

// The user's pinned profile facts (name, time zone, family...), most important first.
export async function listProfileFacts(
  db: Queryable,
  userId: string,
  limit: number,
): Promise<{ id: string; content: string }[]> {
  const { rows } = await db.query<{ id: string; content: string }>(
    `SELECT id, content FROM memory.facts
     WHERE user_id = $1 AND category = 'profile' AND valid_to IS NULL
     ORDER BY importance DESC, created_at LIMIT $2`,
    [userId, limit],
  );
  return rows;
}
