import { randomUUID } from 'node:crypto';
import { type MemoryKind, memoryImport } from '@jarvis/contracts';
import { withTransaction } from '@jarvis/db';
import { LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { createLogger } from '@jarvis/telemetry';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { replaceSparseVectors } from '../repositories/embeddings-repository';
import { indexSummary } from './compact-conversation';
import { ingestDocument } from './documents-service';
import { rememberFact } from './facts-service';
import { writeFile } from './files-service';
import { reembedSparseBatch, startSparseReembed } from './sparse-reembed';

// Migration 015 queued every sparse vector that existed, made from the old terms. These store
// items of every kind through their own indexers, put a stand-in old vector in place of each,
// queue them as the migration does, and check that the re-embed writes back exactly what the
// indexers wrote.

let memory: MemoryFixture;

beforeAll(async () => {
  memory = await startMemoryFixture('sparse-reembed');
});

afterAll(async () => {
  await memory?.stop();
});

// A vector no term of these texts hashes to: what an old one looks like to the new terms.
const OLD_VECTOR = '{1:1}/1048576';

type Row = { item_kind: MemoryKind; item_id: string; sparse: string; created_at: string };

async function sparseRows(userId: string): Promise<Row[]> {
  const { rows } = await memory.db.pool.query<Row>(
    `SELECT item_kind, item_id, sparse::text, created_at::text FROM memory.embeddings
     WHERE user_id = $1 AND model = $2 ORDER BY item_kind, item_id`,
    [userId, LOCAL_EMBEDDING_MODEL],
  );
  return rows;
}

// Every kind of item, each stored and embedded by its own code.
async function storeEveryKind(userId: string): Promise<void> {
  const conversationId = randomUUID();
  await memory.clientBus.request(memoryImport, {
    userId,
    conversationId,
    batchKey: `reembed:${conversationId}`,
    firstIndex: 0,
    messages: [
      'We adopted a beagle named Biscuit.',
      'Biscuit loves chasing squirrels in the park.',
      'My sister is painting his portrait.',
    ].map((content, index) => ({
      role: index % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content,
      createdAt: new Date(Date.UTC(2026, 0, 1, 10, index)).toISOString(),
    })),
  });
  await rememberFact(memory.db.pool, {
    userId,
    content: 'The user has a beagle called Biscuit.',
    category: 'fact',
    tags: [],
    importance: 5,
    sourceMessageIds: [],
  });
  await ingestDocument(memory.db.pool, {
    userId,
    title: 'Dog care',
    contentType: 'text/plain',
    content: Array.from({ length: 400 }, (_, i) => `Beagles need walks, item ${i}.`).join(' '),
  });
  await writeFile(memory.db.pool, { userId, path: 'notes/dog-food.md', content: 'Kibble twice.' });
  await withTransaction(memory.db.pool, async (db) => {
    const id = randomUUID();
    const { rows } = await db.query<{ to_at: Date }>(
      `INSERT INTO memory.summaries (id, user_id, conversation_id, from_seq, to_seq, from_at, to_at,
                                     content)
       SELECT $1, $2, $3, min(seq), max(seq), min(created_at), max(created_at),
              'They adopted Biscuit, a beagle.'
       FROM memory.messages WHERE conversation_id = $3
       RETURNING to_at`,
      [id, userId, conversationId],
    );
    const toAt = rows[0]?.to_at ?? new Date();
    await indexSummary(db, userId, {
      id,
      conversationId,
      content: 'They adopted Biscuit, a beagle.',
      toAt,
    });
  });
}

// What migration 015 leaves: the old vectors, every one of them queued.
async function ageVectors(userId: string): Promise<void> {
  await memory.db.pool.query(
    `UPDATE memory.embeddings SET sparse = $3::sparsevec WHERE user_id = $1 AND model = $2`,
    [userId, LOCAL_EMBEDDING_MODEL, OLD_VECTOR],
  );
  await memory.db.pool.query(
    `INSERT INTO memory.sparse_reembed_queue (item_id, item_kind)
     SELECT item_id, item_kind FROM memory.embeddings WHERE user_id = $1 AND model = $2`,
    [userId, LOCAL_EMBEDDING_MODEL],
  );
}

const queued = () => memory.countRows('SELECT count(*) FROM memory.sparse_reembed_queue', []);

describe('re-embedding the sparse vectors made from the old terms', () => {
  it('writes back what each kind’s own indexer writes, in batches shared by replicas', async () => {
    const userId = randomUUID();
    await storeEveryKind(userId);
    const indexed = await sparseRows(userId);
    expect(new Set(indexed.map((row) => row.item_kind))).toEqual(
      new Set(['message', 'fact', 'document', 'file', 'summary']),
    );
    await ageVectors(userId);
    expect((await sparseRows(userId)).every((row) => row.sparse === OLD_VECTOR)).toBe(true);

    // Two replicas at once take disjoint batches; together they take every item once.
    let taken = 0;
    for (;;) {
      const [first, second] = await Promise.all([
        reembedSparseBatch(memory.db.pool, 2),
        reembedSparseBatch(memory.db.pool, 2),
      ]);
      if (first + second === 0) break;
      taken += first + second;
    }

    expect(taken).toBe(indexed.length);
    expect(await queued()).toBe(0);
    // The same vectors, and the same write times: the dense indexer sees nothing new.
    expect(await sparseRows(userId)).toEqual(indexed);
  });

  it('leaves alone an item forgotten after it was queued', async () => {
    const userId = randomUUID();
    await storeEveryKind(userId);
    await ageVectors(userId);
    const [gone] = await sparseRows(userId);
    if (!gone) throw new Error('no rows');
    await memory.db.pool.query('DELETE FROM memory.embeddings WHERE item_id = $1', [gone.item_id]);

    while ((await reembedSparseBatch(memory.db.pool, 100)) > 0) {}

    const after = await sparseRows(userId);
    expect(after.map((row) => row.item_id)).not.toContain(gone.item_id);
    expect(after.filter((row) => row.sparse === OLD_VECTOR)).toEqual([]);
    expect(await queued()).toBe(0);
  });

  it('keeps a vector an indexer wrote after the re-embed read the item', async () => {
    const userId = randomUUID();
    await storeEveryKind(userId);
    const [read] = await sparseRows(userId);
    if (!read) throw new Error('no rows');
    // The indexer's write lands between the re-embed's read and its own write.
    await memory.db.pool.query(
      `UPDATE memory.embeddings SET sparse = '{2:1}/1048576', created_at = now()
       WHERE item_id = $1`,
      [read.item_id],
    );

    await replaceSparseVectors(memory.db.pool, LOCAL_EMBEDDING_MODEL, [
      {
        kind: read.item_kind,
        itemId: read.item_id,
        writtenAt: read.created_at,
        vector: { indices: [0], values: [1] },
      },
    ]);

    const after = await sparseRows(userId);
    expect(after.find((row) => row.item_id === read.item_id)?.sparse).toBe('{2:1}/1048576');
  });

  it('runs in the background until the queue is empty, and resumes after a stop', async () => {
    const userId = randomUUID();
    await storeEveryKind(userId);
    const indexed = await sparseRows(userId);
    await ageVectors(userId);
    const logger = createLogger('test', 'silent');

    // A stop after the first batch leaves the rest queued for the next start.
    const first = startSparseReembed(memory.db.pool, logger, { batchSize: 1, retryMs: 100 });
    await waitFor(async () => ((await queued()) < indexed.length ? true : undefined), {
      timeoutMs: 10_000,
      what: 'a first batch',
    });
    await first.stop();
    const second = startSparseReembed(memory.db.pool, logger, { batchSize: 1, retryMs: 100 });
    await waitFor(async () => ((await queued()) === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'an empty queue',
    });
    await second.stop();

    expect(await sparseRows(userId)).toEqual(indexed);
  });
});
