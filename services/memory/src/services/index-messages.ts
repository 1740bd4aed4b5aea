import type { Pool, Queryable } from '@jarvis/db';
import { withTransaction } from '@jarvis/db';
import { countTermsByText, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { Logger } from '@jarvis/telemetry';
import { type EmbeddingRow, upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import {
  claimQueuedConversation,
  hasQueuedMessages,
  takeQueuedMessages,
} from '../repositories/index-queue-repository';
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

// Indexes one conversation's queued messages, in the transaction that takes them off the queue.
// False when nothing (of the user's, when given) was left to claim.
function indexQueuedConversation(
  pool: Pool,
  options: { userId: string | undefined; isWaiting: boolean },
): Promise<boolean> {
  return withTransaction(pool, async (db) => {
    const claimed = await claimQueuedConversation(db, options);
    if (!claimed) return false;
    const messages = await takeQueuedMessages(db, claimed.conversationId);
    await indexMessages(db, claimed.userId, claimed.conversationId, messages);
    return true;
  });
}

// A search finds what its user said a moment ago: the user's queued messages are indexed first,
// waiting for a background drain that holds some of them. Costs one lookup when none are queued.
export async function indexUserMessagesNow(pool: Pool, userId: string): Promise<void> {
  while (await hasQueuedMessages(pool, userId)) {
    // A locking read whose row another drain took meanwhile can come back empty while rows are
    // left: the loop looks again.
    await indexQueuedConversation(pool, { userId, isWaiting: true });
  }
}

export type MessageIndexer = {
  // A message was queued: index it shortly, with whatever else is queued by then.
  kick(): void;
  stop(): Promise<void>;
};

export type IndexerSettings = {
  // How long a queued message waits, so that a turn's question and answer are indexed together
  // and neither on the turn's path.
  delayMs: number;
  // Pause before trying again after the database failed a drain.
  retryMs: number;
};

const DEFAULT_INDEXER: IndexerSettings = { delayMs: 250, retryMs: 5_000 };

// Messages appended by turns are made searchable here, in the background. What is still queued
// at a start (a crash, a stop mid-drain) is indexed first.
export function startMessageIndexer(
  pool: Pool,
  logger: Logger,
  settings: IndexerSettings = DEFAULT_INDEXER,
): MessageIndexer {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let draining: Promise<void> | undefined;
  let isKickedWhileDraining = false;

  const schedule = (delayMs: number) => {
    if (stopping.signal.aborted || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      drain();
    }, delayMs);
  };
  const drain = () => {
    if (draining) {
      isKickedWhileDraining = true;
      return;
    }
    draining = (async () => {
      try {
        let isClaimed = true;
        while (isClaimed && !stopping.signal.aborted) {
          isClaimed = await indexQueuedConversation(pool, { userId: undefined, isWaiting: false });
        }
      } catch (error) {
        logger.warn({ err: error }, 'message indexing failed; trying again');
        schedule(settings.retryMs);
      } finally {
        draining = undefined;
        if (isKickedWhileDraining) {
          isKickedWhileDraining = false;
          schedule(settings.delayMs);
        }
      }
    })();
  };

  schedule(0);
  return {
    kick: () => schedule(settings.delayMs),
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await draining;
    },
  };
}
