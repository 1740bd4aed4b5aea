import type { Pool } from '@jarvis/db';
import { Counter, Gauge, Histogram, type Logger, type Metrics } from '@jarvis/telemetry';
import { countItemsByKind } from '../repositories/stats-repository';

// What an extraction did: one of the model's operations as applied (one it asked for that
// changed nothing, such as adding a fact already known, is a noop), or the turn skipped without
// asking the model (nothing new in it) or failed (an unusable answer, or the last attempt failed).
export type ExtractionOutcome = 'add' | 'update' | 'invalidate' | 'noop' | 'skipped' | 'failed';
// Where a search ran: memory.search (the search tool and the API) or a turn's memory.recall.
export type SearchMode = 'search' | 'recall';

export type MemoryMetrics = {
  countExtraction(outcome: ExtractionOutcome): void;
  countSummaries(count: number): void;
  // Runs the search and times it (failed ones too).
  timeSearch<T>(mode: SearchMode, search: () => Promise<T>): Promise<T>;
};

// A scrape every 15 s would otherwise count every table every 15 s.
const ITEMS_CACHE_MS = 60_000;
// Seconds; a recall is tens of milliseconds, a search over a large memory up to a second or two.
const SEARCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function createMemoryMetrics(metrics: Metrics, pool: Pool, logger: Logger): MemoryMetrics {
  const registers = [metrics.registry];
  let items: { at: number; counts: Promise<Record<string, number>> } | undefined;
  new Gauge({
    name: 'jarvis_memory_items',
    help: 'Items memory holds, of every user, by kind (counted at most once a minute).',
    labelNames: ['kind'],
    registers,
    async collect() {
      if (!items || Date.now() - items.at > ITEMS_CACHE_MS) {
        items = { at: Date.now(), counts: countItemsByKind(pool) };
      }
      const read = items;
      try {
        for (const [kind, count] of Object.entries(await read.counts)) this.set({ kind }, count);
      } catch (error) {
        // The database away must not fail the scrape: the gauge keeps its last values, and the
        // next scrape asks again.
        if (items === read) items = undefined;
        logger.debug({ err: error }, 'memory items not counted for metrics');
      }
    },
  });
  const extractions = new Counter({
    name: 'jarvis_memory_extractions_total',
    help: 'Fact extraction outcomes: each operation applied (add, update, invalidate, noop), or a turn skipped or failed.',
    labelNames: ['outcome'],
    registers,
  });
  const summaries = new Counter({
    name: 'jarvis_memory_summaries_total',
    help: 'Conversation summaries written.',
    registers,
  });
  const searchDuration = new Histogram({
    name: 'jarvis_memory_search_duration_seconds',
    help: 'Time of a memory search (mode search) or of a whole recall for a turn (mode recall).',
    labelNames: ['mode'],
    buckets: SEARCH_BUCKETS,
    registers,
  });
  return {
    countExtraction: (outcome) => extractions.inc({ outcome }),
    countSummaries: (count) => summaries.inc(count),
    async timeSearch(mode, search) {
      const end = searchDuration.startTimer({ mode });
      try {
        return await search();
      } finally {
        end();
      }
    },
  };
}
