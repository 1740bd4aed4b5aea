import { type Bus, ensureWorkQueue, startWorker, type WorkQueueOptions } from '@jarvis/bus';
import { MODEL_USAGE_STREAM, modelUsageRecorded, usageEventsOf } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import { applyUsageEvents, pruneAppliedEvents } from './usage-repository';

const USAGE_QUEUE: WorkQueueOptions = {
  stream: MODEL_USAGE_STREAM,
  // Every replica shares this consumer: each event is rolled up by one of them.
  consumer: 'model-gateway-usage-rollup',
  ackWaitMs: 30_000,
  // Never give up on an event: a Postgres outage only delays the rollup (the worker backs off
  // up to 30 s between deliveries), and usage must not go missing from it.
  maxDeliver: -1,
  maxInFlight: 8,
  // The meter may publish an event again when a publish timed out but landed: JetStream drops
  // the copy within this window, the applied-events table after it.
  duplicateWindowMs: 60 * 60_000,
};

// Markers of applied events are kept far longer than any redelivery or publish retry can lag.
const APPLIED_EVENTS_KEEP_DAYS = 7;
const PRUNE_EVERY_MS = 60 * 60_000;

// The stream the meter publishes to. startUsageRollup creates it; the meter needs it to exist.
export async function ensureUsageStream(bus: Bus): Promise<void> {
  await ensureWorkQueue(bus, modelUsageRecorded, USAGE_QUEUE);
}

// The durable consumer that rolls usage events up in Postgres, each event id exactly once, a
// stream message (a batch of events) in one statement.
export async function startUsageRollup(deps: {
  bus: Bus;
  pool: Pool;
  logger: Logger;
}): Promise<{ stop(): Promise<void> }> {
  const { bus, pool, logger } = deps;
  await ensureUsageStream(bus);
  const worker = await startWorker(bus, modelUsageRecorded, USAGE_QUEUE, async (message) => {
    const events = usageEventsOf(message);
    const applied = await applyUsageEvents(pool, events);
    if (applied < events.length) {
      logger.debug({ events: events.length, applied }, 'usage events already rolled up');
    }
    return { type: 'ack' };
  });

  const prune = () =>
    pruneAppliedEvents(pool, APPLIED_EVENTS_KEEP_DAYS).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not prune applied usage events');
    });
  await prune();
  const pruning = setInterval(prune, PRUNE_EVERY_MS);
  pruning.unref();

  return {
    async stop() {
      clearInterval(pruning);
      await worker.stop();
    },
  };
}
