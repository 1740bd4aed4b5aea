import type { Bus } from '@jarvis/bus';
import { type MemoryKind, modelEmbed, modelRoute } from '@jarvis/contracts';
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
// dense channel. Which model, if any, comes from model-gateway's embed route: nothing is embedded
// just to find out, and with no embed model routable no embed request is made at all.

export type DenseSettings = {
  // Texts per embed request.
  batchSize: number;
  // Longest a search waits for its query's vector before going on without it.
  queryTimeoutMs: number;
  // How often model-gateway's embed route is read again (a cooldown over, a replica restarted
  // with another model).
  routeIntervalMs: number;
  // Pause when nothing is left to embed.
  idleMs: number;
  // Everything is walked again this often, for rows written out of order by long transactions.
  rescanIntervalMs: number;
};

const DEFAULT_DENSE: DenseSettings = {
  batchSize: 32,
  queryTimeoutMs: 2_000,
  routeIntervalMs: 60_000,
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

export function startDenseIndexer(
  bus: Bus,
  pool: Pool,
  load: Load,
  settings: DenseSettings = DEFAULT_DENSE,
): DenseIndexer {
  // The embed model (provider/model) the route names now, and whether its last embed failed:
  // searches then go on without it until the route is read again.
  let current: string | undefined;
  let isFailing = false;
  let routedAt = 0;
  let scannedAt = 0;
  let cursor: Cursor | undefined;
  let isStopped = false;
  let wake: (() => void) | undefined;
  // Models whose HNSW index this process has made sure of; its size comes from the first vectors.
  const indexed = new Set<string>();

  // The first embed model not cooling down, as an embed call would try them. A new one starts
  // the walk from the beginning.
  async function readRoute(): Promise<void> {
    routedAt = Date.now();
    const route = await bus.request(modelRoute, { purpose: 'embed' }, { timeoutMs: 10_000 });
    const usable = route.models.find(
      (model) => !model.coolingDownUntil || Date.parse(model.coolingDownUntil) <= Date.now(),
    );
    const next = usable ? `${usable.provider}/${usable.model}` : undefined;
    isFailing = false;
    if (next === current) return;
    bus.logger.info({ model: next ?? null }, 'dense embedding model');
    current = next;
    cursor = undefined;
  }

  // One batch: returns whether there may be more.
  async function embedBatch(model: string): Promise<boolean> {
    if (Date.now() - scannedAt > settings.rescanIntervalMs) {
      scannedAt = Date.now();
      cursor = undefined;
    }
    const pending = await findPendingItems(pool, model, cursor, settings.batchSize);
    const last = pending.at(-1);
    if (!last) return false;
    const texts = await loadTexts(pool, load, pending);
    const ready = pending.filter((item) => texts.has(item.itemId));
    // One request per user, so model-gateway counts each user's usage.
    for (const [userId, items] of groupBy(ready, (item) => item.userId)) {
      const reply = await bus.request(
        modelEmbed,
        { userId, texts: items.map((item) => texts.get(item.itemId) ?? ''), model },
        { timeoutMs: 120_000 },
      );
      if (!indexed.has(model)) {
        await ensureDenseIndex(pool, { model, dimensions: reply.dimensions });
        indexed.add(model);
      }
      await insertDenseEmbeddings(
        pool,
        model,
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
        if (!current || Date.now() - routedAt >= settings.routeIntervalMs) await readRoute();
        const model = current;
        const hasMore = model ? await embedBatch(model) : false;
        failures = 0;
        if (hasMore) pause = 0;
        else if (!model) pause = settings.routeIntervalMs;
      } catch (error) {
        failures += 1;
        // Model-gateway away or its model down: the route is read again, ever more slowly (a
        // model that keeps failing cools down there, and is then left out).
        pause = Math.min(settings.idleMs * 2 ** failures, settings.routeIntervalMs);
        routedAt = 0;
        isFailing = true;
        bus.logger.warn({ err: error, model: current }, 'dense embedding paused');
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
      const model = current;
      if (!model || isFailing) return undefined;
      try {
        const reply = await bus.request(
          modelEmbed,
          { userId, texts: [text], model },
          { timeoutMs: settings.queryTimeoutMs },
        );
        const vector = reply.vectors[0];
        return vector ? { dense: { model, dimensions: reply.dimensions }, vector } : undefined;
      } catch (error) {
        // The searches after this one do not wait for a model that just failed.
        isFailing = true;
        bus.logger.warn({ err: error, model }, 'search went on without dense vectors');
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
