import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { memoryAppend, memoryForgetApply, memoryRecall, memorySearch } from '@jarvis/contracts';
import { embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { createLogger } from '@jarvis/telemetry';
import { type TestDatabase, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerForgetHandlers } from '../forget-handlers';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { loadVectors } from '../repositories/embeddings-repository';
import { readTerms } from '../repositories/terms-repository';
import { type IndexerSettings, startMessageIndexer } from './index-messages';
import { appendMessage } from './messages-service';

// Messages a turn stores are indexed off its path: these check that none is ever left
// unsearchable, that a search still finds what was said a moment ago, and that forgetting a
// message before it was indexed keeps the term statistics right.

const logger = createLogger('test', 'silent');
let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;
let countRows: MemoryFixture['countRows'];

beforeAll(async () => {
  // Indexing waits long enough that nothing is indexed behind a test's back unless it asks.
  memory = await startMemoryFixture('memory-index', [registerForgetHandlers], {
    delayMs: 60_000,
    retryMs: 60_000,
    holdMs: 60_000,
  });
  ({ db, clientBus, countRows } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

const queued = (userId: string) =>
  countRows('SELECT count(*) FROM memory.message_index_queue WHERE user_id = $1', [userId]);
const embedded = (messageId: string) =>
  countRows('SELECT count(*) FROM memory.embeddings WHERE item_id = $1', [messageId]);
const itemCount = (userId: string) =>
  countRows('SELECT coalesce(sum(items), 0) AS count FROM memory.item_counts WHERE user_id = $1', [
    userId,
  ]);

// The vector's dimensions: which words (of the message and its context) it holds.
async function embeddedTerms(userId: string, messageId: string): Promise<number[]> {
  const vectors = await loadVectors(db.pool, userId, LOCAL_EMBEDDING_MODEL, [messageId]);
  return [...(vectors.get(messageId)?.indices ?? [])].sort((a, b) => a - b);
}
const termsOf = async (text: string, context: string[]) => {
  const [terms = [], contextTerms = []] = await readTerms(db.pool, [text, context.join('\n')]);
  return [...embedDocument({ terms, context: contextTerms }).indices].sort((a, b) => a - b);
};
const embeddedAt = async (messageId: string) =>
  (
    await db.pool.query<{ created_at: Date }>(
      'SELECT created_at FROM memory.embeddings WHERE item_id = $1',
      [messageId],
    )
  ).rows[0]?.created_at.getTime();
const isMarkedWithoutNext = async (messageId: string) =>
  (
    await db.pool.query<{ embedded_without_next: boolean }>(
      'SELECT embedded_without_next FROM memory.messages WHERE id = $1',
      [messageId],
    )
  ).rows[0]?.embedded_without_next;

// Runs an indexer of its own (nothing kicks it: it drains at its start and when a hold runs out)
// until the user's queue is down to `left` messages.
async function drainUntil(userId: string, left: number, settings: IndexerSettings) {
  const indexer = startMessageIndexer(db.pool, logger, settings);
  try {
    await waitFor(async () => ((await queued(userId)) === left ? true : undefined), {
      timeoutMs: 10_000,
      what: `the queue to be down to ${left}`,
    });
  } finally {
    await indexer.stop();
  }
}

const HOLDING: IndexerSettings = { delayMs: 50, retryMs: 60_000, holdMs: 60_000 };

async function say(userId: string, content: string) {
  return (await clientBus.request(memoryAppend, { userId, role: 'user', content })).message;
}

describe('message indexing off the turn path', () => {
  it('queues an appended message in its transaction, and a search finds it at once', async () => {
    const userId = randomUUID();
    const message = await say(userId, 'The spare key is under the blue flowerpot.');
    expect(await queued(userId)).toBe(1);
    expect(await embedded(message.id)).toBe(0);

    const { results } = await clientBus.request(memorySearch, { userId, query: 'spare key' });

    expect(results.map((result) => result.id)).toContain(message.id);
    expect(await queued(userId)).toBe(0);
    expect(await embedded(message.id)).toBe(1);
    expect(await itemCount(userId)).toBe(1);
  });

  it("leaves a turn's recall to its recent messages, without waiting for the queue", async () => {
    const userId = randomUUID();
    const message = await say(userId, 'Remember that my locker code is 3141.');

    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId: message.conversationId,
      messageId: message.id,
      query: message.content,
      tokenLimit: 2_000,
      recentLimit: 10,
    });

    expect(recall.recent.map((recent) => recent.id)).toEqual([message.id]);
    expect(await queued(userId)).toBe(1);
  });

  it('indexes what a stopped service left queued as soon as the next one starts', async () => {
    const userId = randomUUID();
    // Stored through the service function, so nothing kicks an indexer: as if the process
    // had died right after the append.
    const first = await appendMessage(db.pool, {
      userId,
      role: 'user',
      content: 'We planted three apple trees by the fence.',
    });
    const second = await appendMessage(db.pool, {
      userId,
      role: 'assistant',
      content: 'Apple trees need a pollinator nearby.',
    });
    expect(await queued(userId)).toBe(2);

    // The newest message waits for its successor, for 1.5 s here: the restarted indexer takes
    // the first at once, and the second when its hold runs out, with nothing kicking it.
    await drainUntil(userId, 1, { ...HOLDING, holdMs: 1_500 });
    expect(await embeddedTerms(userId, first.message.id)).toEqual(
      await termsOf(first.message.content, [second.message.content]),
    );
    expect(await embedded(second.message.id)).toBe(0);
    await drainUntil(userId, 0, { ...HOLDING, holdMs: 1_500 });

    expect(await embedded(first.message.id)).toBe(1);
    expect(await embeddedTerms(userId, second.message.id)).toEqual(
      await termsOf(second.message.content, [first.message.content]),
    );
    expect(await isMarkedWithoutNext(second.message.id)).toBe(true);
    expect(await itemCount(userId)).toBe(2);
  });

  it('embeds each message once, with both neighbours, unless a search needed it sooner', async () => {
    const userId = randomUUID();
    const store = async (content: string) =>
      (await appendMessage(db.pool, { userId, role: 'user', content })).message;
    const a = await store('The boat is moored at the north pier.');
    const b = await store('Its engine was serviced in March.');
    const c = await store('The harbour fee is due in June.');

    // The newest (c) is held for the next message; the others are embedded with both sides.
    await drainUntil(userId, 1, HOLDING);
    expect(await embeddedTerms(userId, a.id)).toEqual(await termsOf(a.content, [b.content]));
    expect(await embeddedTerms(userId, b.id)).toEqual(
      await termsOf(b.content, [a.content, c.content]),
    );
    expect(await embedded(c.id)).toBe(0);

    // A search cannot wait: c is embedded now, without a successor, and marked so.
    const { results } = await clientBus.request(memorySearch, { userId, query: 'harbour fee' });
    expect(results.map((result) => result.id)).toContain(c.id);
    expect(await embeddedTerms(userId, c.id)).toEqual(await termsOf(c.content, [b.content]));
    expect(await isMarkedWithoutNext(c.id)).toBe(true);
    const bEmbeddedAt = await embeddedAt(b.id);

    // Its successor comes: c is embedded again with it, once; b is left as it was.
    const d = await store('The mooring contract ends next spring.');
    const e = await store('Ask the harbour master about winter storage.');
    await drainUntil(userId, 1, HOLDING);
    expect(await embeddedTerms(userId, c.id)).toEqual(
      await termsOf(c.content, [b.content, d.content]),
    );
    expect(await isMarkedWithoutNext(c.id)).toBe(false);
    expect(await embeddedTerms(userId, d.id)).toEqual(
      await termsOf(d.content, [c.content, e.content]),
    );
    expect(await embedded(e.id)).toBe(0);
    expect(await embeddedAt(b.id)).toBe(bEmbeddedAt);
    expect(await itemCount(userId)).toBe(4);
  });

  it('forgets a message that was never indexed without miscounting its words', async () => {
    const userId = randomUUID();
    const kept = await say(userId, 'My favourite tea is oolong.');
    await clientBus.request(memorySearch, { userId, query: 'tea' });
    expect(await itemCount(userId)).toBe(1);
    const secret = await say(userId, 'My bank PIN is 9876, keep it quiet.');
    expect(await queued(userId)).toBe(1);

    const { forgotten } = await clientBus.request(memoryForgetApply, {
      userId,
      items: [{ kind: 'message', id: secret.id }],
    });

    expect(forgotten).toBe(1);
    expect(await queued(userId)).toBe(0);
    expect(await itemCount(userId)).toBe(1);
    const { results } = await clientBus.request(memorySearch, { userId, query: 'bank PIN' });
    expect(results.map((result) => result.id)).not.toContain(secret.id);
    expect(await embedded(secret.id)).toBe(0);
    expect(await embedded(kept.id)).toBe(1);
  });

  it("never drops or indexes another user's queued message when forgetting", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const message = await say(alice, 'The alarm code is 2718.');

    const { forgotten } = await clientBus.request(memoryForgetApply, {
      userId: bob,
      items: [{ kind: 'message', id: message.id }],
    });

    expect(forgotten).toBe(0);
    expect(await queued(alice)).toBe(1);
    const { results } = await clientBus.request(memorySearch, {
      userId: alice,
      query: 'alarm code',
    });
    expect(results.map((result) => result.id)).toContain(message.id);
  });
});
