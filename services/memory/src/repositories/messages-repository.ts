import { randomUUID } from 'node:crypto';
import type { MessageRole, StoredMessage } from '@jarvis/contracts';
import type { Pool, PoolClient, Queryable } from '@jarvis/db';

type MessageRow = {
  id: string;
  conversation_id: string;
  role: MessageRole;
  content: string;
  created_at: Date;
};

const COLUMNS = 'id, conversation_id, role, content, created_at';

type SequencedRow = MessageRow & { seq: string };

function toMessage(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    conversationId: row.conversation_id,
    role: row.role,
    content: row.content,
    createdAt: row.created_at.toISOString(),
  };
}

export type AppendedMessage = {
  userId: string;
  // The user's default conversation when undefined: created with their first message.
  conversationId: string | undefined;
  role: MessageRole;
  content: string;
  metadata: Record<string, unknown>;
  idempotencyKey: string | undefined;
};

// `seq`: the message's position among all messages, the order its conversation's turns are
// answered in (bigint, read as text by pg).
export type AppendOutcome =
  | { type: 'stored'; message: StoredMessage; seq: number }
  // A message with this idempotency key is already in the conversation.
  | { type: 'duplicate'; message: StoredMessage; seq: number }
  // The conversation is not the user's (or not there); for the default conversation, another
  // statement created it while this one ran (see appendMessage).
  | { type: 'no_conversation' };

// Stores the message and queues it for indexing (index-messages.ts) in one statement: it is
// never stored unsearchable, and atomic without a transaction. A turn appends two messages on its
// path, where a transaction's five round trips would each wait on the network. The default
// conversation is created on first use; two first messages racing each other end up in the same
// row thanks to its partial unique index.
export async function appendQueuedMessage(
  db: Queryable,
  message: AppendedMessage,
): Promise<AppendOutcome> {
  // The stored message's columns are all null when nothing was stored (the LEFT JOIN below).
  const { rows } = await db.query<
    { found_conversation_id: string | null } & (SequencedRow | { [K in keyof SequencedRow]: null })
  >(
    `WITH made AS (
       INSERT INTO memory.conversations (id, user_id, is_default)
       SELECT $1, $2, true WHERE $3::uuid IS NULL
       ON CONFLICT (user_id) WHERE is_default DO NOTHING
       RETURNING id
     ), conversation AS (
       SELECT id FROM made
       UNION ALL
       SELECT id FROM memory.conversations
       WHERE user_id = $2 AND (CASE WHEN $3::uuid IS NULL THEN is_default ELSE id = $3 END)
       LIMIT 1
     ), stored AS (
       INSERT INTO memory.messages
         (id, user_id, conversation_id, role, content, metadata, idempotency_key)
       SELECT $4, $2, conversation.id, $5, $6, $7, $8 FROM conversation
       ON CONFLICT (conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
       RETURNING ${COLUMNS}, seq
     ), queued AS (
       INSERT INTO memory.message_index_queue (message_id, user_id, conversation_id)
       SELECT id, $2, conversation_id FROM stored
     )
     SELECT (SELECT id FROM conversation) AS found_conversation_id, stored.*
     FROM (SELECT 1) AS one LEFT JOIN stored ON true`,
    [
      randomUUID(),
      message.userId,
      message.conversationId ?? null,
      randomUUID(),
      message.role,
      message.content,
      JSON.stringify(message.metadata),
      message.idempotencyKey ?? null,
    ],
  );
  const row = rows[0];
  const conversationId = row?.found_conversation_id;
  if (!row || !conversationId) return { type: 'no_conversation' };
  if (row.id !== null) return { type: 'stored', message: toMessage(row), seq: Number(row.seq) };
  const existing = await db.query<SequencedRow>(
    `SELECT ${COLUMNS}, seq FROM memory.messages
     WHERE conversation_id = $1 AND idempotency_key = $2 AND user_id = $3`,
    [conversationId, message.idempotencyKey, message.userId],
  );
  const duplicate = existing.rows[0];
  if (!duplicate) throw new Error('idempotent insert found neither a new nor an existing row');
  return { type: 'duplicate', message: toMessage(duplicate), seq: Number(duplicate.seq) };
}

export type RecentMessage = StoredMessage & {
  // The user message this one answers (a reply's metadata `replyTo`), if it names one.
  replyTo: string | undefined;
};

// The latest `limit` messages of a conversation that no summary covers yet, oldest first: what a
// summary covers reaches the prompt through the summary. Given a turn's own message, the list
// ends at it: user messages stored after it, and replies to them, wait for their own turns.
export async function listRecentMessages(
  db: Pool,
  userId: string,
  conversationId: string,
  limit: number,
  untilMessageId: string | undefined,
): Promise<RecentMessage[]> {
  const { rows } = await db.query<MessageRow & { reply_to: string | null }>(
    `SELECT ${COLUMNS}, reply_to FROM (
       SELECT ${COLUMNS}, seq, metadata->>'replyTo' AS reply_to FROM memory.messages m
       WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
         AND seq > coalesce(
           (SELECT max(to_seq) FROM memory.summaries WHERE conversation_id = $1), 0)
         AND NOT EXISTS (
           SELECT 1 FROM memory.messages later
           WHERE later.conversation_id = $1 AND later.role = 'user'
             AND later.seq > (SELECT seq FROM memory.messages WHERE id = $4 AND user_id = $2)
             AND (later.id = m.id OR later.id::text = m.metadata->>'replyTo'))
       ORDER BY seq DESC LIMIT $3
     ) recent ORDER BY seq ASC`,
    [conversationId, userId, limit, untilMessageId ?? null],
  );
  return rows.map((row) => ({ ...toMessage(row), replyTo: row.reply_to ?? undefined }));
}

export type ImportRow = {
  // A restored export brings its own (derived) ids; otherwise one is generated.
  id?: string;
  role: MessageRole;
  content: string;
  author: string | undefined;
  createdAt: string;
  metadata: Record<string, unknown>;
  idempotencyKey: string;
};

export type IndexedMessage = {
  id: string;
  content: string;
  createdAt: Date;
};

// Inserts in the given order (so `seq` keeps it); rows whose key was stored before are skipped.
export async function insertMessagesInOrder(
  db: PoolClient,
  userId: string,
  conversationId: string,
  rows: ImportRow[],
): Promise<IndexedMessage[]> {
  const { rows: inserted } = await db.query<{ id: string; content: string; created_at: Date }>(
    `INSERT INTO memory.messages
       (id, user_id, conversation_id, role, content, author, metadata, idempotency_key, created_at)
     SELECT coalesce(id, gen_random_uuid()), $1, $2, role, content, author, metadata, key, created_at
     FROM unnest($3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::timestamptz[],
       $9::uuid[])
       WITH ORDINALITY AS t(role, content, author, metadata, key, created_at, id, position)
     ORDER BY position
     ON CONFLICT (conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
     RETURNING id, content, created_at`,
    [
      userId,
      conversationId,
      rows.map((row) => row.role),
      rows.map((row) => row.content),
      rows.map((row) => row.author ?? null),
      rows.map((row) => JSON.stringify(row.metadata)),
      rows.map((row) => row.idempotencyKey),
      rows.map((row) => row.createdAt),
      rows.map((row) => row.id ?? null),
    ],
  );
  return inserted.map((row) => ({ id: row.id, content: row.content, createdAt: row.created_at }));
}

export type Neighbours = {
  // Up to `before` messages just before the given ones, oldest first; the last of them says
  // whether it was embedded before it had a successor.
  previous: (IndexedMessage & { isEmbeddedWithoutNext: boolean })[];
  // The message just after them, if there is one yet.
  next: IndexedMessage | undefined;
};

// The messages around a run of a conversation's messages (forgotten ones left out): the context
// of new messages, and the message whose context the first of them extends.
export async function listNeighbours(
  db: Queryable,
  conversationId: string,
  ids: string[],
  before: number,
): Promise<Neighbours> {
  const { rows } = await db.query<{
    id: string;
    content: string;
    created_at: Date;
    embedded_without_next: boolean;
    seq: string;
    is_before: boolean;
  }>(
    `WITH run AS (
       SELECT min(seq) AS first_seq, max(seq) AS last_seq FROM memory.messages
       WHERE id = ANY($2::uuid[]))
     (SELECT id, content, created_at, embedded_without_next, seq, true AS is_before
      FROM memory.messages, run
      WHERE conversation_id = $1 AND forgotten_at IS NULL AND seq < run.first_seq
      ORDER BY seq DESC LIMIT $3)
     UNION ALL
     (SELECT id, content, created_at, embedded_without_next, seq, false
      FROM memory.messages, run
      WHERE conversation_id = $1 AND forgotten_at IS NULL AND seq > run.last_seq
      ORDER BY seq LIMIT 1)`,
    [conversationId, ids, before],
  );
  const toIndexed = (row: (typeof rows)[number]) => ({
    id: row.id,
    content: row.content,
    createdAt: row.created_at,
  });
  const nextRow = rows.find((row) => !row.is_before);
  return {
    previous: rows
      .filter((row) => row.is_before)
      .sort((a, b) => Number(a.seq) - Number(b.seq))
      .map((row) => ({ ...toIndexed(row), isEmbeddedWithoutNext: row.embedded_without_next })),
    next: nextRow ? toIndexed(nextRow) : undefined,
  };
}

// Sets or clears the mark of messages embedded before they had a successor: `withoutNext` (if
// any) was, the rest of `ids` now were not.
export async function markEmbeddedWithoutNext(
  db: Queryable,
  ids: string[],
  withoutNext: string | undefined,
): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE memory.messages SET embedded_without_next = (id = $2::uuid) IS TRUE
     WHERE id = ANY($1::uuid[])`,
    [ids, withoutNext ?? null],
  );
}

export type MessageText = { content: string; createdAt: Date };

// The user's messages among these ids, by id: another user's are not found.
export async function findMessageTexts(
  db: Queryable,
  userId: string,
  ids: string[],
): Promise<Map<string, MessageText>> {
  const { rows } = await db.query<{ id: string; content: string; created_at: Date }>(
    'SELECT id, content, created_at FROM memory.messages WHERE user_id = $1 AND id = ANY($2::uuid[])',
    [userId, ids],
  );
  return new Map(
    rows.map((row) => [row.id, { content: row.content, createdAt: row.created_at }] as const),
  );
}

// One of the user's messages, unless it was forgotten.
export async function findMessage(
  db: Queryable,
  userId: string,
  id: string,
): Promise<StoredMessage | undefined> {
  const { rows } = await db.query<MessageRow>(
    `SELECT ${COLUMNS} FROM memory.messages
     WHERE id = $1 AND user_id = $2 AND forgotten_at IS NULL`,
    [id, userId],
  );
  return rows[0] ? toMessage(rows[0]) : undefined;
}

// The user's and the assistant's messages stored just before this one in its conversation,
// newest first: what "remember this" may point to. Tool and system messages are not something the
// user said or read.
export async function listMessagesBefore(
  db: Queryable,
  userId: string,
  message: Pick<StoredMessage, 'id' | 'conversationId'>,
  limit: number,
): Promise<StoredMessage[]> {
  const { rows } = await db.query<MessageRow>(
    `SELECT ${COLUMNS} FROM memory.messages
     WHERE conversation_id = $2 AND user_id = $1 AND forgotten_at IS NULL
       AND role IN ('user', 'assistant')
       AND seq < (SELECT seq FROM memory.messages WHERE id = $3 AND user_id = $1)
     ORDER BY seq DESC LIMIT $4`,
    [userId, message.conversationId, message.id, limit],
  );
  return rows.map(toMessage);
}

// Which of the given messages were stored after the given one (by seq, the order memory stored
// them: two appends at once can carry their times the other way round).
export async function findMessagesStoredAfter(
  db: Queryable,
  userId: string,
  messageId: string,
  ids: string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT m.id FROM memory.messages m
     WHERE m.user_id = $1 AND m.id = ANY($3::uuid[])
       AND m.seq > (SELECT seq FROM memory.messages WHERE id = $2 AND user_id = $1)`,
    [userId, messageId, ids],
  );
  return new Set(rows.map((row) => row.id));
}

// A forgotten message stays on record but leaves recall, search and export. Answers the
// messages forgotten now: another user's, and those forgotten before, are left alone.
export async function markMessagesForgotten(
  db: PoolClient,
  userId: string,
  ids: string[],
): Promise<{ id: string; content: string }[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string; content: string }>(
    `UPDATE memory.messages SET forgotten_at = now()
     WHERE user_id = $1 AND id = ANY($2::uuid[]) AND forgotten_at IS NULL
     RETURNING id, content`,
    [userId, ids],
  );
  return rows;
}

// Embeddings have no foreign key to their items: a forgotten message's go by hand, so vector
// search cannot find it.
export async function deleteMessageEmbeddings(
  db: PoolClient,
  userId: string,
  ids: string[],
): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `DELETE FROM memory.embeddings
     WHERE item_kind = 'message' AND user_id = $1 AND item_id = ANY($2::uuid[])`,
    [userId, ids],
  );
}

export type SequencedMessage = StoredMessage & { seq: number };

// One page of a conversation's history, newest first, forgotten messages left out.
export async function listConversationMessages(
  db: Queryable,
  userId: string,
  conversationId: string,
  limit: number,
  beforeSeq: number | undefined,
): Promise<SequencedMessage[]> {
  const { rows } = await db.query<SequencedRow>(
    `SELECT ${COLUMNS}, seq FROM memory.messages
     WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
       AND ($3::bigint IS NULL OR seq < $3)
     ORDER BY seq DESC LIMIT $4`,
    [conversationId, userId, beforeSeq ?? null, limit],
  );
  return rows.map((row) => ({ ...toMessage(row), seq: Number(row.seq) }));
}

// The messages either side of one (forgotten ones left out): up to `limit` from it on, oldest
// first, the message itself leading; and up to `limit` before it, newest first. Both empty when
// the message is not in the user's conversation, or forgotten.
export async function listMessagesAround(
  db: Queryable,
  userId: string,
  conversationId: string,
  messageId: string,
  limit: number,
): Promise<{ fromIt: SequencedMessage[]; before: SequencedMessage[] }> {
  const { rows } = await db.query<SequencedRow & { is_before: boolean }>(
    `WITH anchor AS (
       SELECT seq FROM memory.messages
       WHERE id = $3 AND conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL)
     (SELECT ${COLUMNS}, seq, false AS is_before FROM memory.messages
      WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
        AND seq >= (SELECT seq FROM anchor)
      ORDER BY seq LIMIT $4)
     UNION ALL
     (SELECT ${COLUMNS}, seq, true FROM memory.messages
      WHERE conversation_id = $1 AND user_id = $2 AND forgotten_at IS NULL
        AND seq < (SELECT seq FROM anchor)
      ORDER BY seq DESC LIMIT $4)`,
    [conversationId, userId, messageId, limit],
  );
  const toSequenced = (row: SequencedRow) => ({ ...toMessage(row), seq: Number(row.seq) });
  const fromIt = rows.filter((row) => !row.is_before).map(toSequenced);
  const before = rows.filter((row) => row.is_before).map(toSequenced);
  return {
    fromIt: fromIt.sort((a, b) => a.seq - b.seq),
    before: before.sort((a, b) => b.seq - a.seq),
  };
}
