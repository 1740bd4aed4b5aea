import type { PoolClient, Queryable } from '@jarvis/db';
import type { IndexedMessage } from './messages-repository';

// Messages a drain takes at most per transaction; the rest go in the next one.
const DRAIN_BATCH = 500;

export async function hasQueuedMessages(db: Queryable, userId: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM memory.message_index_queue WHERE user_id = $1 LIMIT 1',
    [userId],
  );
  return rows.length > 0;
}

// The conversation of the oldest queued message (of one user, when given), locked for this
// transaction. A background drain skips conversations another drain holds; a search that needs
// its user's messages indexed waits for them instead.
export async function claimQueuedConversation(
  db: PoolClient,
  options: { userId: string | undefined; isWaiting: boolean },
): Promise<{ userId: string; conversationId: string } | undefined> {
  const { rows } = await db.query<{ user_id: string; conversation_id: string }>(
    `SELECT user_id, conversation_id FROM memory.message_index_queue
     WHERE ($1::uuid IS NULL OR user_id = $1)
     ORDER BY queued_at LIMIT 1
     FOR UPDATE ${options.isWaiting ? '' : 'SKIP LOCKED'}`,
    [options.userId ?? null],
  );
  const row = rows[0];
  if (!row) return undefined;
  // One drain per conversation at a time: each embeds a message with its neighbours' text, and
  // two at once could each miss the other's messages.
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [row.conversation_id]);
  return { userId: row.user_id, conversationId: row.conversation_id };
}

// Takes the conversation's oldest queued messages off the queue: those still there (not
// forgotten meanwhile), in conversation order.
export async function takeQueuedMessages(
  db: PoolClient,
  conversationId: string,
): Promise<IndexedMessage[]> {
  const { rows } = await db.query<{ id: string; content: string; created_at: Date }>(
    `WITH taken AS (
       DELETE FROM memory.message_index_queue WHERE message_id IN (
         SELECT message_id FROM memory.message_index_queue WHERE conversation_id = $1
         ORDER BY queued_at LIMIT $2)
       RETURNING message_id)
     SELECT m.id, m.content, m.created_at FROM memory.messages m JOIN taken t ON t.message_id = m.id
     WHERE m.forgotten_at IS NULL ORDER BY m.seq`,
    [conversationId, DRAIN_BATCH],
  );
  return rows.map((row) => ({ id: row.id, content: row.content, createdAt: row.created_at }));
}

// Takes messages off the queue unindexed (they are being forgotten); answers those that were
// there, whose words were never counted. Waits for a drain indexing them to finish first.
export async function dropQueuedMessages(
  db: PoolClient,
  userId: string,
  ids: string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ message_id: string }>(
    `DELETE FROM memory.message_index_queue WHERE user_id = $1 AND message_id = ANY($2::uuid[])
     RETURNING message_id`,
    [userId, ids],
  );
  return new Set(rows.map((row) => row.message_id));
}
