import type { Bus } from '@jarvis/bus';
import { type MemoryKind, modelEmbed } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  type Cursor,
  type DenseModel,
  ensureDenseIndex,
  findPendingItems,
  insertDenseEmbeddings,
  type PendingItem,
} from '../repositories/dense-embeddings-repository';
import type { ItemDetails } from '../repositories/search-repository';

// Dense vectors from the embed model that model-gateway routes to (Ollama's nomic-embed-text by
// default), added to search beside the built-in sparse embedder. They are made in the
// background: writes never wait for a model, and an install without one loses nothing but the
// dense channel. When model-gateway answers an embed request with its built-in embedder, there
// is no dense model: memory's own sparse vectors (weighted by each user's term statistics)
// already do that embedder's job better.

type DenseSettings = {
  // Texts per embed request.
  batchSize: number;
  // Longest a search waits for its query's vector before going on without it.
  queryTimeoutMs: number;
  // How often the embed model is asked again (a new model configured, Ollama back).
  probeIntervalMs: number;
  // Pause when nothing is left to embed.
  idleMs: number;
  // Everything is walked again this often, for rows written out of order by long transactions.
  rescanIntervalMs: number;
};

const DEFAULT_DENSE: DenseSettings = {
  batchSize: 32,
  queryTimeoutMs: 2_000,
  probeIntervalMs: 60_000,
  idleMs: 2_000,
  rescanIntervalMs: 10 * 60_000,
};

export type DenseIndex = {
  // The query's vector, or undefined when there is no dense model or it did not answer in time.
  embedQuery(
    userId: string,
    text: string,
  ): Promise<{ dense: DenseModel; vector: number[] } | undefined>;
};

export type DenseIndexer = DenseIndex & { stop(): Promise<void> };

type Load = (pool: Pool, kind: MemoryKind, userId: string, ids: string[]) => Promise<ItemDetails[]>;

const PROBE_TEXT = 'jarvis';

export function startDenseIndexer(
  bus: Bus,
  pool: Pool,
  load: Load,
  settings: DenseSettings = DEFAULT_DENSE,
): DenseIndexer {
  let current: DenseModel | undefined;
  let probedAt = 0;
  let scannedAt = 0;
  let cursor: Cursor | undefined;
  let isStopped = false;
  let wake: (() => void) | undefined;

  // Which model model-gateway embeds with now. A new one starts the walk from the beginning.
  async function probe(): Promise<void> {
    probedAt = Date.now();
    const reply = await bus.request(modelEmbed, { texts: [PROBE_TEXT] }, { timeoutMs: 30_000 });
    const next =
      reply.provider === 'local' ? undefined : { model: reply.model, dimensions: reply.dimensions };
    if (next?.model !== current?.model || next?.dimensions !== current?.dimensions) {
      if (next) await ensureDenseIndex(pool, next);
      bus.logger.info({ model: next?.model ?? null }, 'dense embedding model');
      current = next;
      cursor = undefined;
    }
  }

  // One batch: returns whether there may be more.
  async function embedBatch(dense: DenseModel): Promise<boolean> {
    if (Date.now() - scannedAt > settings.rescanIntervalMs) {
      scannedAt = Date.now();
      cursor = undefined;
    }
    const pending = await findPendingItems(pool, dense.model, cursor, settings.batchSize);
    const last = pending.at(-1);
    if (!last) return false;
    const texts = await loadTexts(pool, load, pending);
    const ready = pending.filter((item) => texts.has(item.itemId));
    // One request per user, so model-gateway counts each user's usage.
    for (const [userId, items] of groupBy(ready, (item) => item.userId)) {
      const reply = await bus.request(
        modelEmbed,
        { userId, texts: items.map((item) => texts.get(item.itemId) ?? ''), model: dense.model },
        { timeoutMs: 120_000 },
      );
      await insertDenseEmbeddings(
        pool,
        dense.model,
        items.map((item, index) => ({ item, vector: reply.vectors[index] ?? [] })),
      );
    }
    // Items that could not be loaded (forgotten since) are passed over, not retried forever.
    cursor = { indexedAt: last.indexedAt, itemId: last.itemId };
    return pending.length === settings.batchSize;
  }

  async function run(): Promise<void> {
    let failures = 0;
    while (!isStopped) {
      let pause = settings.idleMs;
      try {
        if (!current || Date.now() - probedAt > settings.probeIntervalMs) await probe();
        const hasMore = current ? await embedBatch(current) : false;
        failures = 0;
        if (hasMore) pause = 0;
        else if (!current) pause = settings.probeIntervalMs;
      } catch (error) {
        failures += 1;
        // Model-gateway away or its model down: tried again, ever more slowly.
        pause = Math.min(settings.idleMs * 2 ** failures, settings.probeIntervalMs);
        probedAt = 0;
        bus.logger.warn({ err: error, model: current?.model }, 'dense embedding paused');
      }
      if (pause > 0) await sleep(pause);
    }
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  const running = run();
  return {
    async embedQuery(userId, text) {
      const dense = current;
      if (!dense) return undefined;
      try {
        const reply = await bus.request(
          modelEmbed,
          { userId, texts: [text], model: dense.model },
          { timeoutMs: settings.queryTimeoutMs },
        );
        const vector = reply.vectors[0];
        return vector ? { dense, vector } : undefined;
      } catch (error) {
        bus.logger.warn({ err: error, model: dense.model }, 'search went on without dense vectors');
        return undefined;
      }
    },
    async stop() {
      isStopped = true;
      wake?.();
      await running;
    },
  };
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

// Each item's text as search shows it, loaded per kind and user.
async function loadTexts(
  pool: Pool,
  load: Load,
  items: PendingItem[],
): Promise<Map<string, string>> {
  const groups = groupBy(items, (item) => `${item.kind}:${item.userId}`);
  const loaded = await Promise.all(
    [...groups.values()].map((group) => {
      const [first] = group;
      if (!first) return [];
      return load(
        pool,
        first.kind,
        first.userId,
        group.map((item) => item.itemId),
      );
    }),
  );
  return new Map(loaded.flat().map((item) => [item.id, item.text]));
}
