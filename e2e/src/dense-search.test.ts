import { randomUUID } from 'node:crypto';
import { MemorySearchResponse } from '@jarvis/contracts';
import { type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Memory's dense vectors come from the embed model that model-gateway routes to: here the fake
// server's OpenAI embeddings (16 dimensions, the same vector for the same text, unrelated
// vectors otherwise).
const EMBED_MODEL = 'openai/fake-embed';

describe('dense embeddings through model-gateway', () => {
  let fixture: StackFixture;
  let key: string;
  let userId: string;
  let db: pg.Client;

  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  const denseRows = async () => {
    const { rows } = await db.query<{ count: string }>(
      'SELECT count(*) FROM memory.embeddings WHERE user_id = $1 AND model = $2',
      [userId, EMBED_MODEL],
    );
    return Number(rows[0]?.count);
  };

  beforeAll(async () => {
    fixture = await startStackFixture({ MODEL_ROUTE_EMBED: EMBED_MODEL });
    const user = await fixture.createUser('dana');
    key = user.apiKey;
    userId = user.user.id;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  it('embeds every item in the background and finds what only the embed model can match', async () => {
    const conversationId = randomUUID();
    const messages = ['We adopted a dog called Rex.', 'Who was it?', 'The plumber, on Tuesday.'];
    const imported = await call('POST', `/v1/conversations/${conversationId}/messages/import`, {
      messages: messages.map((content, index) => ({
        role: index % 2 === 0 ? 'user' : 'assistant',
        content,
        createdAt: new Date(Date.UTC(2024, 0, 1, 10, index)).toISOString(),
      })),
    });
    expect(imported.status).toBe(200);
    const fact = await call('POST', '/v1/memory/facts', { content: 'Rex is a beagle.' });
    expect(fact.status).toBe(201);

    await waitFor(async () => (await denseRows()) === messages.length + 1, {
      timeoutMs: 30_000,
      what: 'dense vectors of every item',
    });
    const { rows: indexes } = await db.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = 'memory' AND indexdef LIKE '%hnsw%vector(16)%'",
    );
    expect(indexes).toHaveLength(1);
    expect(indexes[0]?.indexdef).toContain(EMBED_MODEL);

    // Only stop words: the sparse embedder and full-text search see nothing in it; the embed
    // model gives the same text the same vector.
    const response = await call('POST', '/v1/memory/search', { query: 'Who was it?', limit: 3 });
    expect(response.status).toBe(200);
    const { results } = MemorySearchResponse.parse(await response.json());
    expect(results[0]?.text).toBe('Who was it?');

    // Embedding is counted as the user's usage (never refused). The four items may go in one
    // call, and the search's own call is rolled up in the background (MODEL_USAGE), so only the
    // indexing's call is certain to be counted by now.
    const usage = await call('GET', '/v1/usage');
    const body = (await usage.json()) as { today: { requests: number } };
    expect(body.today.requests).toBeGreaterThanOrEqual(1);
  });

  it('embeds a rewritten file again, from its new text', async () => {
    const write = (content: string) =>
      call('PUT', '/v1/memory/files/content', { path: 'notes/garden.md', content });
    const vectorOfFile = async () => {
      const { rows } = await db.query<{ dense: string }>(
        `SELECT e.dense::text AS dense FROM memory.embeddings e
         JOIN memory.files f ON f.id = e.item_id
         WHERE f.user_id = $1 AND f.path = 'notes/garden.md' AND e.model = $2`,
        [userId, EMBED_MODEL],
      );
      return rows[0]?.dense;
    };
    expect((await write('Plant tomatoes in May.')).status).toBe(200);
    const first = await waitFor(vectorOfFile, { timeoutMs: 30_000, what: 'the first vector' });

    expect((await write('Plant garlic in October.')).status).toBe(200);
    const second = await waitFor(
      async () => {
        const vector = await vectorOfFile();
        return vector !== undefined && vector !== first ? vector : undefined;
      },
      { timeoutMs: 30_000, what: 'a vector of the new text' },
    );

    expect(second).not.toBe(first);
  });
});
