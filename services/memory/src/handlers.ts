import { type Bus, startWorker, type WorkQueueOptions } from '@jarvis/bus';
import {
  compactionRequested,
  extractionRequested,
  memoryAppend,
  memoryImport,
  memoryRecall,
  memorySearch,
  type StoredMessage,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { registerHistoryHandlers } from './history-handlers';
import {
  type CompactionSettings,
  compactConversation,
  DEFAULT_COMPACTION,
  requestCompactionIfDue,
} from './services/compact-conversation';
import type { DenseIndex } from './services/dense-index';
import {
  type ExtractionSettings,
  extractFacts,
  readTurn,
  recordExtractionGaveUp,
} from './services/extract-facts';
import type { MessageIndexer } from './services/index-messages';
import type { MemoryMetrics, SearchMode } from './services/memory-metrics';
import { appendMessage, importMessages } from './services/messages-service';
import { recallContext } from './services/recall-service';
import { rememberIfAsked } from './services/remember-command';
import { searchMemory } from './services/search-service';
import { writeEpisode } from './services/write-episode';

export function registerHandlers(
  bus: Bus,
  pool: Pool,
  indexer: MessageIndexer,
  compaction = DEFAULT_COMPACTION,
  dense?: DenseIndex,
  metrics?: MemoryMetrics,
) {
  const timed = <T>(mode: SearchMode, search: () => Promise<T>) =>
    metrics ? metrics.timeSearch(mode, search) : search();
  // Compaction runs off the request path: the reply does not wait for the tail to be measured,
  // and a failure to queue it never fails the write (the next message checks again).
  const compactLater = (userId: string, conversationId: string) =>
    requestCompactionIfDue(bus, pool, compaction, userId, conversationId).catch((error: unknown) =>
      bus.logger.warn({ err: error, conversationId }, 'could not queue compaction'),
    );
  // The message is stored either way; a fact that could not be stored is left to extraction.
  const rememberNow = (userId: string, message: StoredMessage) =>
    rememberIfAsked(pool, userId, message).catch((error: unknown) =>
      bus.logger.warn(
        { err: error, messageId: message.id },
        'could not store the fact the user asked for',
      ),
    );
  return [
    bus.serve(memoryAppend, async (request) => {
      const stored = await appendMessage(pool, request);
      if (!stored.isDuplicate) {
        indexer.kick();
        await rememberNow(request.userId, stored.message);
      }
      void compactLater(request.userId, stored.message.conversationId);
      return stored;
    }),
    bus.serve(memoryRecall, (request) =>
      timed('recall', () => recallContext(pool, request, new Date(), dense)),
    ),
    bus.serve(memoryImport, async (request) => {
      const result = await importMessages(pool, request);
      await compactLater(request.userId, request.conversationId);
      return result;
    }),
    bus.serve(memorySearch, (request) =>
      timed('search', () => searchMemory(pool, request, new Date(), dense)),
    ),
    ...registerHistoryHandlers(bus, pool),
  ];
}

// Summarises long conversation tails. A model that is down is retried later, with growing pauses.
export function startCompactionWorker(
  bus: Bus,
  pool: Pool,
  compaction: CompactionSettings,
  queue: WorkQueueOptions,
  metrics?: MemoryMetrics,
) {
  return startWorker(bus, compactionRequested, queue, async (job, delivery) => {
    try {
      const { isDone, summaries } = await compactConversation(
        bus,
        pool,
        compaction,
        job.userId,
        job.conversationId,
      );
      metrics?.countSummaries(summaries);
      if (!isDone)
        await requestCompactionIfDue(bus, pool, compaction, job.userId, job.conversationId);
      return { type: 'ack' };
    } catch (error) {
      bus.logger.warn({ err: error, conversationId: job.conversationId }, 'compaction failed');
      if (delivery.deliveryCount >= queue.maxDeliver) return { type: 'drop' };
      return { type: 'retry', delayMs: Math.min(30_000 * delivery.deliveryCount, 300_000) };
    }
  });
}

// Writes each finished turn's episode and looks for facts worth keeping in it. The episode never
// waits for the model (it falls back to excerpts); for the facts, a model that is down is retried
// later, with growing pauses, and after the last attempt the turn is recorded as failed.
export function startExtractionWorker(
  bus: Bus,
  pool: Pool,
  settings: ExtractionSettings,
  queue: WorkQueueOptions,
  metrics?: MemoryMetrics,
) {
  return startWorker(bus, extractionRequested, queue, async (job, delivery) => {
    try {
      const turn = await readTurn(pool, job);
      if (turn) await writeEpisode(bus, pool, settings, job, turn);
      const outcomes = await extractFacts(bus, pool, settings, job, turn);
      for (const outcome of outcomes) metrics?.countExtraction(outcome);
      return { type: 'ack' };
    } catch (error) {
      const isLast = delivery.deliveryCount >= queue.maxDeliver;
      bus.logger.warn(
        { err: error, runId: job.runId, turnId: job.turnId, isLast },
        'fact extraction failed',
      );
      if (!isLast) {
        return { type: 'retry', delayMs: Math.min(15_000 * delivery.deliveryCount, 120_000) };
      }
      await recordExtractionGaveUp(pool, job, error);
      metrics?.countExtraction('failed');
      return { type: 'drop' };
    }
  });
}
