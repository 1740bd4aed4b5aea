import type { Queryable } from '@jarvis/db';
import { countTermsByText, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { type EmbeddingRow, upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import { type IndexedMessage, listNeighbours } from '../repositories/messages-repository';
import { addTermCounts } from '../repositories/term-stats-repository';

// Makes new messages of one conversation searchable: term statistics, and an embedding whose
// context is the message before and the message after. The message that preceded them gains its
// "after" now, so it is embedded again.
export async function indexMessages(
  db: Queryable,
  userId: string,
  conversationId: string,
  messages: IndexedMessage[],
): Promise<void> {
  if (messages.length === 0) return;
  const { previous } = await listNeighbours(
    db,
    conversationId,
    messages.map((message) => message.id),
    2,
  );
  const sequence = [...previous, ...messages];
  const firstNew = previous.length;
  const rows: EmbeddingRow[] = [];
  for (let i = Math.max(firstNew - 1, 0); i < sequence.length; i++) {
    const message = sequence[i];
    if (!message) continue;
    const context = [sequence[i - 1], sequence[i + 1]]
      .flatMap((neighbour) => (neighbour ? [neighbour.content] : []))
      .join('\n');
    rows.push({
      kind: 'message',
      itemId: message.id,
      userId,
      conversationId,
      itemCreatedAt: message.createdAt,
      vector: embedDocument({ text: message.content, context }),
    });
  }
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, rows);

  const termCounts = countTermsByText(messages.map((message) => message.content));
  await addTermCounts(db, userId, termCounts, messages.length);
}
