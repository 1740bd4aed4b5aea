import type { Queryable } from '@jarvis/db';
import { isOpenFact } from './facts-repository';

// The user's pinned profile facts (name, time zone, family...), most important first.
export async function listProfileFacts(
  db: Queryable,
  userId: string,
  limit: number,
): Promise<{ id: string; content: string }[]> {
  const { rows } = await db.query<{ id: string; content: string }>(
    `SELECT id, content FROM memory.facts
     WHERE user_id = $1 AND category = 'profile' AND ${isOpenFact()}
     ORDER BY importance DESC, created_at LIMIT $2`,
    [userId, limit],
  );
  return rows;
}

// Every standing rule of the user, oldest first: all of them go in every prompt (their tokens
// are capped together with the instructions when they are stored, so none is left out here).
export async function listStandingRules(
  db: Queryable,
  userId: string,
): Promise<{ id: string; content: string }[]> {
  const { rows } = await db.query<{ id: string; content: string }>(
    `SELECT id, content FROM memory.facts
     WHERE user_id = $1 AND category = 'rule' AND ${isOpenFact()}
     ORDER BY created_at, id`,
    [userId],
  );
  return rows;
}
