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

// Whether a queued message (alias q) may be taken by a drain: it has a successor in its
// conversation, or has waited the hold (ms, in the query parameter named). A conversation's
// newest message is held so that it is embedded once, with the message after it as context
// (index-messages.ts); a hold of 0 takes every message.
const isTakeable = (holdParameter: string) =>
  `(q.queued_at <= now() - make_interval(secs => ${holdParameter}::double precision / 1000)
    OR EXISTS (
      SELECT 1 FROM memory.messages later
      WHERE later.conversation_id = q.conversation_id AND later.forgotten_at IS NULL
        AND later.seq > (SELECT seq FROM memory.messages WHERE id = q.message_id)))`;

// The conversation of the oldest message a drain may take (of one user, when given), locked
// for this transaction. A background drain skips conversations another drain holds; a search
// that needs its user's messages indexed (holdMs 0: all of them) waits for them instead.
export async function claimQueuedConversation(
  db: PoolClient,
  options: { userId: string | undefined; isWaiting: boolean; holdMs: number },
): Promise<{ userId: string; conversationId: string } | undefined> {
  const { rows } = await db.query<{ user_id: string; conversation_id: string }>(
    `SELECT user_id, conversation_id FROM memory.message_index_queue q
     WHERE ($1::uuid IS NULL OR user_id = $1) AND ${isTakeable('$2')}
     ORDER BY queued_at LIMIT 1
     FOR UPDATE ${options.isWaiting ? '' : 'SKIP LOCKED'}`,
    [options.userId ?? null, options.holdMs],
  );
  const row = rows[0];
  if (!row) return undefined;
  // One drain per conversation at a time: each embeds a message with its neighbours' text, and
  // two at once could each miss the other's messages.
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [row.conversation_id]);
  return { userId: row.user_id, conversationId: row.conversation_id };
}

// Takes the conversation's oldest queued messages that a drain may take off the queue: those
// still there (not forgotten meanwhile), in conversation order.
export async function takeQueuedMessages(
  db: PoolClient,
  conversationId: string,
  holdMs: number,
): Promise<IndexedMessage[]> {
  const { rows } = await db.query<{ id: string; content: string; created_at: Date }>(
    `WITH taken AS (
       DELETE FROM memory.message_index_queue WHERE message_id IN (
         SELECT message_id FROM memory.message_index_queue q
         WHERE conversation_id = $1 AND ${isTakeable('$3')}
         ORDER BY queued_at LIMIT $2)
       RETURNING message_id)
     SELECT m.id, m.content, m.created_at FROM memory.messages m JOIN taken t ON t.message_id = m.id
     WHERE m.forgotten_at IS NULL ORDER BY m.seq`,
    [conversationId, DRAIN_BATCH, holdMs],
  );
  return rows.map((row) => ({ id: row.id, content: row.content, createdAt: row.created_at }));
}

// Milliseconds until the longest-queued message's hold runs out (0 or less: it has), or
// undefined when nothing is queued.
export async function untilHoldEnds(db: Queryable, holdMs: number): Promise<number | undefined> {
  const { rows } = await db.query<{ wait_ms: number | null }>(
    `SELECT (extract(epoch FROM min(queued_at) - now()) * 1000 + $1)::float8 AS wait_ms
     FROM memory.message_index_queue`,
    [holdMs],
  );
  return rows[0]?.wait_ms ?? undefined;
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
