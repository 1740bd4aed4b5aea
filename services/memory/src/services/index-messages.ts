import type { Pool, Queryable } from '@jarvis/db';
import { withTransaction } from '@jarvis/db';
import { countTermsByItem, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { Logger } from '@jarvis/telemetry';
import { type EmbeddingRow, upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import {
  claimQueuedConversation,
  hasQueuedMessages,
  takeQueuedMessages,
  untilHoldEnds,
} from '../repositories/index-queue-repository';
import {
  type IndexedMessage,
  listNeighbours,
  markEmbeddedWithoutNext,
} from '../repositories/messages-repository';
import { addTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';

// Makes new messages of one conversation searchable: term statistics, and an embedding whose
// context is the message before and the message after. The message before them is embedded
// again only if it was embedded before it had a successor (marked so, and now it has one).
export async function indexMessages(
  db: Queryable,
  userId: string,
  conversationId: string,
  messages: IndexedMessage[],
): Promise<void> {
  if (messages.length === 0) return;
  const { previous, next } = await listNeighbours(
    db,
    conversationId,
    messages.map((message) => message.id),
    2,
  );
  // The message just before them, when it was embedded without a successor: it gets one now.
  const predecessor = previous.at(-1);
  const stale = predecessor?.isEmbeddedWithoutNext ? predecessor : undefined;
  const sequence = [...previous, ...messages, ...(next ? [next] : [])];
  const firstEmbedded = previous.length - (stale ? 1 : 0);
  const embedded = sequence.slice(firstEmbedded, previous.length + messages.length);
  const contexts = embedded.map((_, k) => {
    const i = firstEmbedded + k;
    return [sequence[i - 1], sequence[i + 1]]
      .flatMap((neighbour) => (neighbour ? [neighbour.content] : []))
      .join('\n');
  });
  const terms = await readTerms(db, [...embedded.map((message) => message.content), ...contexts]);
  const rows: EmbeddingRow[] = embedded.map((message, k) => ({
    kind: 'message',
    itemId: message.id,
    userId,
    conversationId,
    itemCreatedAt: message.createdAt,
    vector: embedDocument({ terms: terms[k] ?? [], context: terms[embedded.length + k] ?? [] }),
  }));
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, rows);
  const withoutNext = next ? undefined : messages.at(-1)?.id;
  await markEmbeddedWithoutNext(
    db,
    [...(stale ? [stale.id] : []), ...(withoutNext ? [withoutNext] : [])],
    withoutNext,
  );

  // The new messages are the last ones embedded, after the stale predecessor if there is one.
  const termCounts = countTermsByItem(
    terms.slice(embedded.length - messages.length, embedded.length),
  );
  await addTermCounts(db, userId, termCounts, messages.length);
}

// Indexes one conversation's queued messages that may be taken, in the transaction that takes
// them off the queue. False when nothing (of the user's, when given) was left to claim.
function indexQueuedConversation(
  pool: Pool,
  options: { userId: string | undefined; isWaiting: boolean; holdMs: number },
): Promise<boolean> {
  return withTransaction(pool, async (db) => {
    const claimed = await claimQueuedConversation(db, options);
    if (!claimed) return false;
    const messages = await takeQueuedMessages(db, claimed.conversationId, options.holdMs);
    await indexMessages(db, claimed.userId, claimed.conversationId, messages);
    return true;
  });
}

// A search finds what its user said a moment ago: the user's queued messages are indexed first,
// held ones too, waiting for a background drain that holds some of them. Costs one lookup when
// none are queued.
export async function indexUserMessagesNow(pool: Pool, userId: string): Promise<void> {
  while (await hasQueuedMessages(pool, userId)) {
    // A locking read whose row another drain took meanwhile can come back empty while rows are
    // left: the loop looks again.
    await indexQueuedConversation(pool, { userId, isWaiting: true, holdMs: 0 });
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
  // Longest a conversation's newest message waits for the next one, so that it is embedded
  // once, with its successor as context, instead of once without and again with it.
  holdMs: number;
};

export const DEFAULT_INDEXER: IndexerSettings = { delayMs: 250, retryMs: 5_000, holdMs: 600_000 };

// Messages appended by turns are made searchable here, in the background. What is still queued
// at a start (a crash, a stop mid-drain) is indexed first, but for held messages, which are
// indexed when their successor comes or their hold runs out.
export function startMessageIndexer(
  pool: Pool,
  logger: Logger,
  settings: IndexerSettings = DEFAULT_INDEXER,
): MessageIndexer {
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let timerDueAt = 0;
  let draining: Promise<void> | undefined;
  let isKickedWhileDraining = false;

  // A drain in delayMs; an earlier one already set stands, a later one (a hold's end) is
  // brought forward.
  const schedule = (delayMs: number) => {
    if (stopping.signal.aborted) return;
    const dueAt = Date.now() + delayMs;
    if (timer) {
      if (timerDueAt <= dueAt) return;
      clearTimeout(timer);
    }
    timerDueAt = dueAt;
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
          isClaimed = await indexQueuedConversation(pool, {
            userId: undefined,
            isWaiting: false,
            holdMs: settings.holdMs,
          });
        }
        // Held messages are left: look again when the first hold runs out (never sooner than
        // a kick would, in case another drain holds the rows that are due).
        const waitMs = await untilHoldEnds(pool, settings.holdMs);
        if (waitMs !== undefined) schedule(Math.max(waitMs, settings.delayMs));
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
