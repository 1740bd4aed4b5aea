import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { memoryAppend, memoryForgetApply, memoryRecall, memorySearch } from '@jarvis/contracts';
import { embedDocument } from '@jarvis/embeddings';
import { createLogger } from '@jarvis/telemetry';
import { type TestDatabase, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerForgetHandlers } from '../forget-handlers';
import { type MemoryHarness, startMemoryHarness } from '../test-harness';
import { startMessageIndexer } from './index-messages';
import { appendMessage } from './messages-service';

// Messages a turn stores are indexed off its path: these check that none is ever left
// unsearchable, that a search still finds what was said a moment ago, and that forgetting a
// message before it was indexed keeps the term statistics right.

const logger = createLogger('test', 'silent');
let memory: MemoryHarness;
let db: TestDatabase;
let clientBus: Bus;
let countRows: MemoryHarness['countRows'];

beforeAll(async () => {
  // Indexing waits long enough that nothing is indexed behind a test's back unless it asks.
  memory = await startMemoryHarness('memory-index', [registerForgetHandlers], {
    delayMs: 60_000,
    retryMs: 60_000,
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
      tokenBudget: 2_000,
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

    const restarted = startMessageIndexer(db.pool, logger);
    try {
      await waitFor(async () => ((await queued(userId)) === 0 ? true : undefined), {
        timeoutMs: 10_000,
        what: 'the queue to drain',
      });
    } finally {
      await restarted.stop();
    }

    expect(await embedded(first.message.id)).toBe(1);
    expect(await embedded(second.message.id)).toBe(1);
    expect(await itemCount(userId)).toBe(2);
    // The first message was embedded again, with the second as its context.
    const { rows } = await db.pool.query<{ sparse: string }>(
      'SELECT sparse::text AS sparse FROM memory.embeddings WHERE item_id = $1',
      [first.message.id],
    );
    const withContext = embedDocument({
      text: first.message.content,
      context: second.message.content,
    });
    expect(rows[0]?.sparse.split(',').length).toBe(withContext.indices.length);
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
