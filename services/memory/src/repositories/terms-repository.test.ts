import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { readTerms } from './terms-repository';

let memory: MemoryFixture;

beforeAll(async () => {
  memory = await startMemoryFixture('terms-repository');
});

afterAll(async () => {
  await memory?.stop();
});

describe('readTerms', () => {
  it("gives each text's terms in order, repeats kept, stop words left out", async () => {
    expect(await readTerms(memory.db.pool, ['What is the name of my dog?', 'dog dog'])).toEqual([
      ['name', 'dog'],
      ['dog', 'dog'],
    ]);
  });

  it('gives every inflection of a word one term, as the Snowball stemmer does', async () => {
    const [painting, named] = await readTerms(memory.db.pool, [
      'painting painted paints Paintings',
      'name named names naming',
    ]);

    expect(new Set(painting)).toEqual(new Set(['paint']));
    expect(new Set(named)).toEqual(new Set(['name']));
  });

  it('keeps numbers whole and drops a possessive', async () => {
    expect(await readTerms(memory.db.pool, ["Flight 447 landed in 2023 at Max's"])).toEqual([
      ['flight', '447', 'land', '2023', 'max'],
    ]);
  });

  it('has no terms for text without words, and none for no texts', async () => {
    expect(await readTerms(memory.db.pool, ['', '?!  ...', 'what is the'])).toEqual([[], [], []]);
    expect(await readTerms(memory.db.pool, [])).toEqual([]);
  });

  it("gives exactly the lexemes of a message's full-text column", async () => {
    const userId = randomUUID();
    const conversationId = randomUUID();
    const content = "I'm painting the state-of-the-art kitchen; you'll see it on 3.5 mb@x.org!";
    await memory.db.pool.query('INSERT INTO memory.conversations (id, user_id) VALUES ($1, $2)', [
      conversationId,
      userId,
    ]);
    const { rows } = await memory.db.pool.query<{ lexemes: string[] }>(
      `INSERT INTO memory.messages (id, user_id, conversation_id, role, content)
       VALUES (gen_random_uuid(), $1, $2, 'user', $3)
       RETURNING tsvector_to_array(search) AS lexemes`,
      [userId, conversationId, content],
    );
    const [terms = []] = await readTerms(memory.db.pool, [content]);

    expect([...new Set(terms)].sort()).toEqual([...(rows[0]?.lexemes ?? [])].sort());
  });
});
