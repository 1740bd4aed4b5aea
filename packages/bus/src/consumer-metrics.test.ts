import { defineEvent } from '@jarvis/contracts';
import { createLogger, createMetrics, type Metrics } from '@jarvis/telemetry';
import { metricSample, NATS_URL, uniqueNamespace, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Bus } from './bus';
import { ensureWorkQueue, publishWork, startWorker, type WorkQueueOptions } from './work-queue';

const job = defineEvent('metrics.job', z.object({ id: z.string() }));
const QUEUE: WorkQueueOptions = {
  stream: 'metrics_jobs',
  consumer: 'metrics-worker',
  ackWaitMs: 30_000,
  maxDeliver: 3,
  maxInFlight: 1,
};

let bus: Bus;
let metrics: Metrics;

beforeAll(async () => {
  metrics = createMetrics('bus-test');
  bus = await Bus.connect({
    url: NATS_URL,
    namespace: uniqueNamespace('consumer_metrics'),
    name: 'test',
    logger: createLogger('test', 'silent'),
    metrics,
  });
  await ensureWorkQueue(bus, job, QUEUE);
});

afterAll(async () => {
  const jsm = await bus.nc.jetstreamManager();
  await jsm.streams.delete(bus.streamName(QUEUE.stream));
  await bus.close();
});

function gaugeOf(text: string, name: string): number | undefined {
  return metricSample(text, name, {
    stream: bus.streamName(QUEUE.stream),
    consumer: QUEUE.consumer,
    service: 'bus-test',
  });
}

describe('JetStream consumer metrics', () => {
  it('gauge the pending and unacknowledged messages of a consumer read, at scrape time', async () => {
    for (const id of ['a', 'b', 'c']) await publishWork(bus, job, { id }, `metrics-${id}`);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const worker = await startWorker(bus, job, QUEUE, async () => {
      await held;
      return { type: 'ack' };
    });
    try {
      // One message in the handler, unacked; the other two wait on the server.
      await waitFor(
        async () => {
          const text = await metrics.registry.metrics();
          return (
            gaugeOf(text, 'jarvis_jetstream_consumer_ack_pending_messages') === 1 &&
            gaugeOf(text, 'jarvis_jetstream_consumer_pending_messages') === 2
          );
        },
        { what: 'the gauges to show 2 pending and 1 unacknowledged', timeoutMs: 15_000 },
      );
    } finally {
      release();
      await worker.stop();
    }
    // A consumer no longer read is no longer gauged.
    const text = await metrics.registry.metrics();
    expect(gaugeOf(text, 'jarvis_jetstream_consumer_pending_messages')).toBeUndefined();
  });

  it('leave out a consumer whose info cannot be read, and the scrape still answers', async () => {
    const untrack = bus.trackConsumer(bus.streamName('no_such_stream'), 'nobody');
    try {
      const text = await metrics.registry.metrics();
      expect(text).toContain('process_resident_memory_bytes');
      expect(text).not.toContain('consumer="nobody"');
    } finally {
      untrack();
    }
  });
});
