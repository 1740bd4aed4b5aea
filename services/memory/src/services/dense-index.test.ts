import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { memoryFactsRemember, modelEmbed, modelRoute, type RoutedModel } from '@jarvis/contracts';
import { type FakeLlm, startFakeLlm, waitFor } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { registerFactHandlers } from '../facts-handlers';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { type DenseIndexer, type DenseSettings, startDenseIndexer } from './dense-index';
import { loadItems } from './search-service';

const SETTINGS: DenseSettings = {
  batchSize: 32,
  queryTimeoutMs: 2_000,
  routeIntervalMs: 50,
  idleMs: 20,
  rescanIntervalMs: 60_000,
};

const EMBED_MODEL: RoutedModel = {
  provider: 'openai',
  model: 'fake-embed',
  contextWindow: 8_192,
  tokenizer: 'unknown',
};

const OpenAiEmbeddings = z.object({ data: z.array(z.object({ embedding: z.array(z.number()) })) });

let harness: MemoryFixture;
let fake: FakeLlm;
// Model-gateway's two contracts as the test sets them: the embed route it answers, and embed
// requests passed to the fake LLM server's OpenAI embeddings, whose record the tests read.
let gateway: Bus;
let routed: RoutedModel[] = [];
let routeReads = 0;
let indexer: DenseIndexer | undefined;

beforeAll(async () => {
  fake = await startFakeLlm();
  harness = await startMemoryFixture('dense-index', [registerFactHandlers]);
  gateway = await connectTestBus(harness.clientBus.namespace);
  gateway.serve(modelRoute, async ({ purpose }) => {
    routeReads += 1;
    return { purpose, models: routed };
  });
  gateway.serve(modelEmbed, async ({ texts, model }) => {
    const response = await fetch(`${fake.openaiBaseUrl}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: model?.split('/')[1], input: texts }),
    });
    const vectors = OpenAiEmbeddings.parse(await response.json()).data.map(
      (item) => item.embedding,
    );
    return {
      provider: 'openai',
      model: model ?? 'openai/fake-embed',
      dimensions: vectors[0]?.length ?? 1,
      vectors,
      inputTokens: 0,
      cached: 0,
    };
  });
  await gateway.nc.flush();
});

afterEach(async () => {
  await indexer?.stop();
  indexer = undefined;
  fake.reset();
});

afterAll(async () => {
  await gateway?.close();
  await harness?.stop();
  await fake?.close();
});

async function rememberFacts(contents: string[]): Promise<string> {
  const userId = randomUUID();
  for (const content of contents) {
    await harness.clientBus.request(memoryFactsRemember, { userId, content });
  }
  return userId;
}

const embedRequests = () => fake.requests.filter((request) => request.kind === 'embeddings');

describe('dense indexer', () => {
  it('makes no embed request while no embed model is routable, cooling down or none', async () => {
    await rememberFacts(['Rex is a beagle.', 'The plumber comes on Tuesday.']);
    routed = [{ ...EMBED_MODEL, coolingDownUntil: new Date(Date.now() + 60_000).toISOString() }];
    routeReads = 0;
    indexer = startDenseIndexer(harness.clientBus, harness.db.pool, loadItems, SETTINGS);

    await waitFor(() => routeReads >= 3, { timeoutMs: 10_000, what: 'three reads of the route' });
    routed = [];
    const readsBefore = routeReads;
    await waitFor(() => routeReads >= readsBefore + 3, { timeoutMs: 10_000, what: 'more reads' });
    const query = await indexer.embedQuery(randomUUID(), 'beagle');

    expect(query).toBeUndefined();
    expect(embedRequests()).toHaveLength(0);
  });

  it('indexes every item once an embed model is routable, embedding nothing else', async () => {
    const contents = ['Clara moved to Edinburgh.', 'Max chewed his leash.'];
    const userId = await rememberFacts(contents);
    routed = [EMBED_MODEL];
    indexer = startDenseIndexer(harness.clientBus, harness.db.pool, loadItems, SETTINGS);

    await waitFor(
      () =>
        harness
          .countRows('SELECT count(*) FROM memory.embeddings WHERE user_id = $1 AND model = $2', [
            userId,
            'openai/fake-embed',
          ])
          .then((count) => count === contents.length),
      { timeoutMs: 10_000, what: 'dense rows of both facts' },
    );
    const query = await indexer.embedQuery(userId, 'leash');

    expect(query).toMatchObject({ dense: { model: 'openai/fake-embed', dimensions: 16 } });
    const embedded = embedRequests().map((request) => JSON.stringify(request.body));
    expect(embedded.join()).not.toContain('jarvis');
    for (const content of contents) expect(embedded.join()).toContain(content);
    expect(embedded.at(-1)).toContain('leash');
  });
});
