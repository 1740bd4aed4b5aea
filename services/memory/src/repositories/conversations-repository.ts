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

export type ConversationRow = {
  id: string;
  isDefault: boolean;
  createdAt: Date;
  lastMessageSeq: number;
  lastMessageAt: Date;
  // The start of its first user message, if it has one.
  opening: string | null;
};

// The user's conversations by their latest message, most recent first; forgotten messages count
// for nothing, so a conversation holding only those is left out.
export async function listConversations(
  db: Queryable,
  userId: string,
  limit: number,
  beforeSeq: number | undefined,
): Promise<ConversationRow[]> {
  const { rows } = await db.query<{
    id: string;
    is_default: boolean;
    created_at: Date;
    last_seq: string;
    last_at: Date;
    opening: string | null;
  }>(
    `SELECT c.id, c.is_default, c.created_at, latest.seq AS last_seq, latest.created_at AS last_at,
       opening.content AS opening
     FROM memory.conversations c
     CROSS JOIN LATERAL (
       SELECT seq, created_at FROM memory.messages m
       WHERE m.conversation_id = c.id AND m.user_id = $1 AND m.forgotten_at IS NULL
       ORDER BY seq DESC LIMIT 1
     ) latest
     LEFT JOIN LATERAL (
       SELECT left(content, 200) AS content FROM memory.messages m
       WHERE m.conversation_id = c.id AND m.user_id = $1 AND m.forgotten_at IS NULL
         AND m.role = 'user'
       ORDER BY seq ASC LIMIT 1
     ) opening ON true
     WHERE c.user_id = $1 AND ($2::bigint IS NULL OR latest.seq < $2)
     ORDER BY latest.seq DESC LIMIT $3`,
    [userId, beforeSeq ?? null, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    isDefault: row.is_default,
    createdAt: row.created_at,
    lastMessageSeq: Number(row.last_seq),
    lastMessageAt: row.last_at,
    opening: row.opening,
  }));
}

export async function findDefaultConversation(
  db: Queryable,
  userId: string,
): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM memory.conversations WHERE user_id = $1 AND is_default',
    [userId],
  );
  return rows[0]?.id;
}
