import type { MemoryKind } from '@jarvis/contracts';
import type { PoolClient } from '@jarvis/db';

export type QueuedItem = { kind: MemoryKind; itemId: string };

// Takes up to `limit` items off the re-embed queue (migration 015). Rows another transaction
// holds are skipped, so replicas share the queue; a row leaves with the transaction that
// re-embeds it, so a crash leaves it for the next try.
export async function takeQueuedItems(db: PoolClient, limit: number): Promise<QueuedItem[]> {
  const { rows } = await db.query<{ item_id: string; item_kind: MemoryKind }>(
    `DELETE FROM memory.sparse_reembed_queue
     WHERE (item_id, item_kind) IN (
       SELECT item_id, item_kind FROM memory.sparse_reembed_queue
       LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING item_id, item_kind`,
    [limit],
  );
  return rows.map((row) => ({ kind: row.item_kind, itemId: row.item_id }));
}

export type ItemToEmbed = QueuedItem & {
  // The embedding row's own write time, as Postgres prints it (to the microsecond).
  writtenAt: string;
  terms: string[];
  context: string[];
};

// The items' terms and their context's, as their indexers read them: a message with the messages
// before and after it (the one after only if it had one when embedded), a document chunk with
// the chunks on either side, a file as its path (separators as spaces) and first 20,000
// characters (index-files.ts). Items that are gone, or have no sparse embedding, are left out.
export async function loadItemsToEmbed(
  db: PoolClient,
  model: string,
  items: QueuedItem[],
): Promise<ItemToEmbed[]> {
  if (items.length === 0) return [];
  const { rows } = await db.query<{
    item_id: string;
    item_kind: MemoryKind;
    written_at: string;
    terms: string[];
    context: string[];
  }>(
    `WITH queued AS (
       SELECT * FROM unnest($2::uuid[], $3::text[]) AS q(item_id, item_kind)
     ), texts AS (
       SELECT q.item_id, q.item_kind, m.content AS body,
         concat_ws(E'\\n',
           (SELECT p.content FROM memory.messages p
            WHERE p.conversation_id = m.conversation_id AND p.seq < m.seq
              AND p.forgotten_at IS NULL
            ORDER BY p.seq DESC LIMIT 1),
           (SELECT n.content FROM memory.messages n
            WHERE NOT m.embedded_without_next AND n.conversation_id = m.conversation_id
              AND n.seq > m.seq AND n.forgotten_at IS NULL
            ORDER BY n.seq LIMIT 1)) AS context
       FROM queued q JOIN memory.messages m ON m.id = q.item_id
       WHERE q.item_kind = 'message'
       UNION ALL
       SELECT q.item_id, q.item_kind, c.content,
         concat_ws(E'\\n',
           (SELECT p.content FROM memory.document_chunks p
            WHERE p.document_id = c.document_id AND p.chunk_index = c.chunk_index - 1),
           (SELECT n.content FROM memory.document_chunks n
            WHERE n.document_id = c.document_id AND n.chunk_index = c.chunk_index + 1))
       FROM queued q JOIN memory.document_chunks c ON c.id = q.item_id
       WHERE q.item_kind = 'document'
       UNION ALL
       SELECT q.item_id, q.item_kind, f.content, NULL
       FROM queued q JOIN memory.facts f ON f.id = q.item_id WHERE q.item_kind = 'fact'
       UNION ALL
       SELECT q.item_id, q.item_kind, s.content, NULL
       FROM queued q JOIN memory.summaries s ON s.id = q.item_id WHERE q.item_kind = 'summary'
       UNION ALL
       SELECT q.item_id, q.item_kind,
         translate(f.path, '/._-', '    ') || E'\\n' || left(f.content, 20000), NULL
       FROM queued q JOIN memory.files f ON f.id = q.item_id WHERE q.item_kind = 'file')
     SELECT t.item_id, t.item_kind, e.created_at::text AS written_at,
       memory.terms(t.body) AS terms, memory.terms(t.context) AS context
     FROM texts t JOIN memory.embeddings e
       ON e.item_id = t.item_id AND e.item_kind = t.item_kind AND e.model = $1`,
    [model, items.map((item) => item.itemId), items.map((item) => item.kind)],
  );
  return rows.map((row) => ({
    kind: row.item_kind,
    itemId: row.item_id,
    writtenAt: row.written_at,
    terms: row.terms,
    context: row.context,
  }));
}
