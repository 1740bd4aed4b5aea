import { type Bus, startWorker, type WorkQueueOptions } from '@jarvis/bus';
import {
  compactionRequested,
  memoryAppend,
  memoryImport,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  type CompactionSettings,
  compactConversation,
  DEFAULT_COMPACTION,
  requestCompactionIfDue,
} from './services/compact-conversation';
import { appendMessage, importMessages } from './services/messages-service';
import { recallContext } from './services/recall-service';
import { searchMemory } from './services/search-service';

export function registerHandlers(bus: Bus, pool: Pool, compaction = DEFAULT_COMPACTION) {
  // Compaction runs off the request path: a failure to queue it never fails the write.
  const compactLater = (userId: string, conversationId: string) =>
    requestCompactionIfDue(bus, pool, compaction, userId, conversationId).catch((error: unknown) =>
      bus.logger.warn({ err: error, conversationId }, 'could not queue compaction'),
    );
  return [
    bus.serve(memoryAppend, async (request) => {
      const stored = await appendMessage(pool, request);
      await compactLater(request.userId, stored.message.conversationId);
      return stored;
    }),
    bus.serve(memoryRecall, (request) => recallContext(pool, request)),
    bus.serve(memoryImport, async (request) => {
      const result = await importMessages(pool, request);
      await compactLater(request.userId, request.conversationId);
      return result;
    }),
    bus.serve(memorySearch, (request) => searchMemory(pool, request)),
  ];
}

// Summarises long conversation tails. A model that is down is retried later, with growing pauses.
export function startCompactionWorker(
  bus: Bus,
  pool: Pool,
  compaction: CompactionSettings,
  queue: WorkQueueOptions,
) {
  return startWorker(bus, compactionRequested, queue, async (job, delivery) => {
    try {
      const { isDone } = await compactConversation(
        bus,
        pool,
        compaction,
        job.userId,
        job.conversationId,
      );
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
