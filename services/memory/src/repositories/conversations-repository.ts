import { randomUUID } from 'node:crypto';
import type { PoolClient, Queryable } from '@jarvis/db';

export async function findConversation(
  db: Queryable,
  userId: string,
  conversationId: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM memory.conversations WHERE id = $1 AND user_id = $2',
    [conversationId, userId],
  );
  return rows[0]?.id;
}

// The user's single persistent conversation, created on first use. Two first messages racing
// each other both end up in the same row thanks to the partial unique index.
export async function ensureDefaultConversation(db: PoolClient, userId: string): Promise<string> {
  await db.query(
    `INSERT INTO memory.conversations (id, user_id, is_default) VALUES ($1, $2, true)
     ON CONFLICT (user_id) WHERE is_default DO NOTHING`,
    [randomUUID(), userId],
  );
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM memory.conversations WHERE user_id = $1 AND is_default',
    [userId],
  );
  const id = rows[0]?.id;
  if (!id) throw new Error('default conversation vanished after insert');
  return id;
}

// The conversation with this id, created for the user if no one has it yet. Undefined when it
// belongs to another user.
export async function ensureConversation(
  db: PoolClient,
  userId: string,
  conversationId: string,
): Promise<string | undefined> {
  await db.query(
    `INSERT INTO memory.conversations (id, user_id) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
    [conversationId, userId],
  );
  return findConversation(db, userId, conversationId);
}
