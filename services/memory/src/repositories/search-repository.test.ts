import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@jarvis/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryHarness, startMemoryHarness } from '../test-harness';
import { messageSource, TEXT_MATCH_BUDGET } from './search-repository';

let memory: MemoryHarness;
let pool: Pool;

beforeAll(async () => {
  memory = await startMemoryHarness('search-repository');
  pool = memory.db.pool;
});

afterAll(async () => {
  await memory?.stop();
});

async function storeMessages(userId: string, contents: string[]): Promise<string[]> {
  const conversationId = randomUUID();
  await pool.query('INSERT INTO memory.conversations (id, user_id) VALUES ($1, $2)', [
    conversationId,
    userId,
  ]);
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO memory.messages (id, user_id, conversation_id, role, content)
     SELECT gen_random_uuid(), $1, $2, 'user', content FROM unnest($3::text[]) AS content
     RETURNING id`,
    [userId, conversationId, contents],
  );
  return rows.map((row) => row.id);
}

describe('message full-text search', () => {
  it("leaves out the words Postgres' statistics find in more messages than the budget", async () => {
    const userId = randomUUID();
    // "supportive" and "supporting" are one lexeme to Postgres ("support"), two terms to the
    // term statistics, which could call the word rare.
    const common = await storeMessages(
      userId,
      Array.from(
        { length: TEXT_MATCH_BUDGET + 200 },
        (_, index) => `The team was supporting release ${index}.`,
      ),
    );
    const rare = await storeMessages(userId, [
      'A zebra crossed the road.',
      'The zebra at the zoo was supportive.',
    ]);
    // Without statistics nothing is known to be common.
    const unfiltered = await messageSource.searchText(
      pool,
      { userId, conversationId: undefined, from: undefined, to: undefined },
      ['supportive', 'zebra'],
      5_000,
    );
    expect(unfiltered.length).toBe(common.length + rare.length);

    await pool.query('ANALYZE memory.messages');
    // The list of common lexemes is read again once a minute: a new pool reads it at once.
    const freshPool = createPool({ url: memory.db.url, applicationName: 'test', max: 1 });
    try {
      const found = await messageSource.searchText(
        freshPool,
        { userId, conversationId: undefined, from: undefined, to: undefined },
        ['supportive', 'zebra'],
        5_000,
      );

      expect(found.sort()).toEqual([...rare].sort());
    } finally {
      await freshPool.end();
    }
  });
});
