import { type Pool, withBatchTransaction } from '@jarvis/db';
import { embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { Logger } from '@jarvis/telemetry';
import { replaceSparseVectors } from '../repositories/embeddings-repository';
import { loadItemsToEmbed, takeQueuedItems } from '../repositories/sparse-reembed-repository';

// Sparse vectors stored before the terms came from Postgres' text search (migration 015) are
// embedded again in the background, off the queue that migration filled. Searches go on
// meanwhile: an old vector still matches the terms both ways spell alike, and full-text search
// never changed. Nothing is ever queued again, so once the queue is empty the loop ends.

export type SparseReembedSettings = {
  // Items per transaction: each is an HNSW insert, so a batch takes seconds, well inside the
  // batch statement timeout, and a crash or a stop loses at most one batch's work.
  batchSize: number;
  // Pause before trying again after the database failed a batch.
  retryMs: number;
};

const DEFAULT_SPARSE_REEMBED: SparseReembedSettings = { batchSize: 100, retryMs: 5_000 };

// One batch, in one transaction: how many items it took off the queue (0: the queue is empty).
export function reembedSparseBatch(pool: Pool, batchSize: number): Promise<number> {
  return withBatchTransaction(pool, async (db) => {
    const queued = await takeQueuedItems(db, batchSize);
    const items = await loadItemsToEmbed(db, LOCAL_EMBEDDING_MODEL, queued);
    await replaceSparseVectors(
      db,
      LOCAL_EMBEDDING_MODEL,
      items.map((item) => ({
        ...item,
        vector: embedDocument({ terms: item.terms, context: item.context }),
      })),
    );
    return queued.length;
  });
}

export function startSparseReembed(
  pool: Pool,
  logger: Logger,
  settings: SparseReembedSettings = DEFAULT_SPARSE_REEMBED,
): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      stopping.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  const running = (async () => {
    let reembedded = 0;
    while (!stopping.signal.aborted) {
      try {
        const taken = await reembedSparseBatch(pool, settings.batchSize);
        if (taken === 0) break;
        reembedded += taken;
      } catch (error) {
        logger.warn({ err: error }, 'sparse re-embedding failed; trying again');
        await pause(settings.retryMs);
      }
    }
    if (reembedded > 0) logger.info({ items: reembedded }, 'sparse vectors re-embedded');
  })();
  return {
    async stop() {
      stopping.abort();
      await running;
    },
  };
}
