import { randomUUID } from 'node:crypto';
import type { Pool } from '@jarvis/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { messageSource } from './search-repository';
import { readTerms } from './terms-repository';

let memory: MemoryFixture;
let pool: Pool;

beforeAll(async () => {
  memory = await startMemoryFixture('search-repository');
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
  const everywhere = (userId: string) => ({
    userId,
    conversationId: undefined,
    from: undefined,
    to: undefined,
  });

  it('matches the terms as the lexemes they are, without stemming them again', async () => {
    const userId = randomUUID();
    const [painted, zebra] = await storeMessages(userId, [
      'I painted the fence.',
      'A zebra crossed the road.',
    ]);
    const [terms] = await readTerms(pool, ['paintings']);

    expect(terms).toEqual(['paint']);
    expect(await messageSource.searchText(pool, everywhere(userId), ['paint'], 10)).toEqual([
      painted,
    ]);
    // "zebra" is its own lexeme; "zebras" is not a lexeme at all, so it matches nothing.
    expect(await messageSource.searchText(pool, everywhere(userId), ['zebra'], 10)).toEqual([
      zebra,
    ]);
    expect(await messageSource.searchText(pool, everywhere(userId), ['zebras'], 10)).toEqual([]);
  });

  it('reads no term as query syntax, whatever characters it holds', async () => {
    const userId = randomUUID();
    const [kitchen] = await storeMessages(userId, ['A state-of-the-art kitchen, at last.']);
    const odd = ["it's", 'a\\b', "back\\'slash", 'foo:*', '!x', '(', 'x <-> y', '|'];

    const found = await messageSource.searchText(
      pool,
      everywhere(userId),
      [...odd, 'state-of-the-art'],
      10,
    );

    expect(found).toEqual([kitchen]);
  });
});
