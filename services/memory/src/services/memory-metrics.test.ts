import { randomUUID } from 'node:crypto';
import { ensureWorkQueue, publishWork, type Worker, type WorkQueueOptions } from '@jarvis/bus';
import {
  COMPACTION_STREAM,
  compactionRequested,
  EXTRACTION_STREAM,
  extractionRequested,
  memoryAppend,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import { createMetrics, type Metrics } from '@jarvis/telemetry';
import { metricSample, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCompactionWorker, startExtractionWorker } from '../handlers';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { type ModelGatewayFixture, startModelGatewayFixture } from '../model-gateway-fixture';

// Memory's handlers and workers on a registry of the test's own, with the real model gateway
// and the fake LLM behind it; the counters are read back as /metrics serves them.
let registry: Metrics;
let memory: MemoryFixture;
let gateway: ModelGatewayFixture;
const workers: Worker[] = [];

const EXTRACTION: WorkQueueOptions = {
  stream: EXTRACTION_STREAM,
  consumer: 'memory-extraction',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 1,
};
const COMPACTION: WorkQueueOptions = {
  stream: COMPACTION_STREAM,
  consumer: 'memory-compaction',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 1,
};

beforeAll(async () => {
  registry = createMetrics('memory-test');
  memory = await startMemoryFixture('memory_metrics', [], undefined, {}, registry);
  gateway = await startModelGatewayFixture(memory.clientBus.namespace, memory.db.url);
  const bus = memory.clientBus;
  await ensureWorkQueue(bus, extractionRequested, EXTRACTION);
  await ensureWorkQueue(bus, compactionRequested, COMPACTION);
  const settings = { modelTimeoutMs: 20_000 };
  workers.push(
    await startExtractionWorker(bus, memory.db.pool, settings, EXTRACTION, memory.metrics),
    await startCompactionWorker(
      bus,
      memory.db.pool,
      { triggerTokens: 20, keepTokens: 5, modelTimeoutMs: 20_000 },
      COMPACTION,
      memory.metrics,
    ),
  );
}, 120_000);

afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await gateway?.stop();
  await memory?.stop();
});

// A sample's value in the registry's text, by name and exact labels (the service's added).
async function sample(name: string, labels: Record<string, string> = {}) {
  const text = await registry.registry.metrics();
  return metricSample(text, name, { ...labels, service: 'memory-test' });
}

async function append(
  userId: string,
  role: 'user' | 'assistant',
  content: string,
  conversationId?: string,
) {
  return memory.clientBus.request(memoryAppend, { userId, conversationId, role, content });
}

describe('memory metrics', () => {
  it('gauge the items memory holds by kind, counted at most once a minute', async () => {
    const userId = randomUUID();
    const first = await append(userId, 'user', 'The greenhouse panels arrive on Wednesday.');
    await append(userId, 'assistant', 'Noted.', first.message.conversationId);
    const messages = await memory.countRows(
      'SELECT count(*) FROM memory.messages WHERE forgotten_at IS NULL',
      [],
    );

    expect(await sample('jarvis_memory_items', { kind: 'message' })).toBe(messages);
    expect(await sample('jarvis_memory_items', { kind: 'episode' })).toBe(0);
    // Another message within the minute: the gauge still shows the count it read.
    await append(userId, 'user', 'And the tax return?', first.message.conversationId);
    expect(await sample('jarvis_memory_items', { kind: 'message' })).toBe(messages);
  });

  it('time searches and recalls apart', async () => {
    const userId = randomUUID();
    const { message } = await append(userId, 'user', 'Our cat is called Biscotti.');
    await memory.clientBus.request(memorySearch, { userId, query: 'cat name' });
    await memory.clientBus.request(memoryRecall, {
      userId,
      conversationId: message.conversationId,
      query: 'What is the name of our cat?',
      tokenLimit: 2_000,
      recentLimit: 10,
    });

    expect(await sample('jarvis_memory_search_duration_seconds_count', { mode: 'search' })).toBe(1);
    expect(await sample('jarvis_memory_search_duration_seconds_count', { mode: 'recall' })).toBe(1);
  });

  it(
    'count extractions by outcome: each operation applied, or the turn skipped',
    {
      timeout: 60_000,
    },
    async () => {
      gateway.fake.onChat(() => ({
        content: JSON.stringify({
          operations: [
            {
              op: 'add',
              content: 'The user keeps bees in the garden in Braga.',
              category: 'fact',
              importance: 5,
            },
            { op: 'noop' },
          ],
        }),
      }));
      const userId = randomUUID();
      const extract = async (asked: string) => {
        const request = await append(userId, 'user', asked);
        const reply = await append(userId, 'assistant', 'Noted.', request.message.conversationId);
        await publishWork(
          memory.clientBus,
          extractionRequested,
          {
            userId,
            conversationId: request.message.conversationId,
            runId: randomUUID(),
            turnId: randomUUID(),
            userMessageId: request.message.id,
            replyMessageId: reply.message.id,
            recalledIds: [],
          },
          randomUUID(),
        );
      };

      await extract('I keep three beehives at the bottom of my garden in Braga.');
      await extract('ok thanks');

      await waitFor(
        async () => (await sample('jarvis_memory_extractions_total', { outcome: 'skipped' })) === 1,
        {
          what: 'the short turn skipped',
          timeoutMs: 30_000,
        },
      );
      await waitFor(
        async () => (await sample('jarvis_memory_extractions_total', { outcome: 'add' })) === 1,
        {
          what: 'the fact added',
          timeoutMs: 30_000,
        },
      );
      expect(await sample('jarvis_memory_extractions_total', { outcome: 'noop' })).toBe(1);
      expect(
        await sample('jarvis_memory_extractions_total', { outcome: 'update' }),
      ).toBeUndefined();
    },
  );

  it('count the summaries written', { timeout: 60_000 }, async () => {
    gateway.fake.onChat(() => ({ content: 'The user talked about the garden at length.' }));
    const userId = randomUUID();
    const first = await append(
      userId,
      'user',
      'Let me tell you about the garden and its many beds.',
    );
    const conversationId = first.message.conversationId;
    for (const text of [
      'The tomatoes went in along the south wall last week.',
      'The beans climb the old fence, and the peas are next to them.',
      'Next year the greenhouse gets a second door for the draught.',
    ]) {
      await append(userId, 'user', text, conversationId);
    }
    await publishWork(
      memory.clientBus,
      compactionRequested,
      { userId, conversationId },
      randomUUID(),
    );

    const written = await waitFor(
      async () => {
        const rows = await memory.countRows(
          'SELECT count(*) FROM memory.summaries WHERE conversation_id = $1',
          [conversationId],
        );
        const counted = await sample('jarvis_memory_summaries_total');
        return rows > 0 && counted === rows ? rows : undefined;
      },
      { what: 'the summaries written and counted', timeoutMs: 30_000 },
    );
    expect(written).toBeGreaterThan(0);
  });
});
