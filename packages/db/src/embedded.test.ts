import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedPostgres, embeddedPostgresUrl, startEmbeddedPostgres } from './embedded';
import { createPool, isDatabaseReachable, type Pool } from './pool';
import { makeTempDir } from './testing';

let dataDir: { path: string; remove(): Promise<void> };
// Whatever is still running when a test fails half-way, so afterAll can stop it.
let running: EmbeddedPostgres | undefined;
let openPool: Pool | undefined;

beforeAll(async () => {
  dataDir = await makeTempDir('embedded-pg');
});

afterAll(async () => {
  await openPool?.end();
  await running?.stop();
  await dataDir?.remove();
});

async function start(analyzeEveryMs?: number): Promise<{ postgres: EmbeddedPostgres; pool: Pool }> {
  running = await startEmbeddedPostgres({
    dataDir: dataDir.path,
    port: 0,
    ...(analyzeEveryMs ? { analyzeEveryMs } : {}),
  });
  openPool = createPool({ url: running.url, applicationName: 'embedded-test', max: 2 });
  return { postgres: running, pool: openPool };
}

async function stop(): Promise<void> {
  await openPool?.end();
  openPool = undefined;
  await running?.stop();
  running = undefined;
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

describe('embeddedPostgresUrl', () => {
  it('builds a pg connection string without TLS', () => {
    expect(embeddedPostgresUrl('127.0.0.1', 54320)).toBe(
      'postgres://postgres:postgres@127.0.0.1:54320/postgres?sslmode=disable',
    );
  });
});

describe('startEmbeddedPostgres', () => {
  it('keeps its data, vectors included, across a stop and a restart on the same folder', async () => {
    const first = await start();
    const firstPort = portOf(first.postgres.url);
    expect(firstPort).toBeGreaterThan(0);
    expect(first.postgres.url).toBe(embeddedPostgresUrl('127.0.0.1', firstPort));

    await first.pool.query(
      'CREATE TABLE memories (id integer PRIMARY KEY, body text NOT NULL, embedding vector(3))',
    );
    await first.pool.query(
      "INSERT INTO memories VALUES (1, 'likes tea', '[1,0,0]'), (2, 'hates rain', '[0,1,0]')",
    );
    const stoppedUrl = first.postgres.url;
    await stop();

    // Stopped means stopped: nothing answers on the old address any more.
    const probe = createPool({ url: stoppedUrl, applicationName: 'embedded-test' });
    try {
      expect(await isDatabaseReachable(probe)).toBe(false);
    } finally {
      await probe.end();
    }

    const second = await start();
    const { rows } = await second.pool.query<{ id: number; body: string; distance: number }>(
      "SELECT id, body, embedding <=> '[1,0,0]' AS distance FROM memories ORDER BY distance",
    );
    expect(rows).toEqual([
      { id: 1, body: 'likes tea', distance: 0 },
      { id: 2, body: 'hates rain', distance: 1 },
    ]);
    await stop();
  });
});

describe('planner statistics', () => {
  it('are refreshed after use, as autovacuum would on a real Postgres', async () => {
    const { pool } = await start(200);
    try {
      await pool.query('CREATE TABLE analyzed (id integer PRIMARY KEY, owner integer)');
      await pool.query('INSERT INTO analyzed SELECT n, n % 10 FROM generate_series(1, 5000) AS n');
      const estimate = async () => {
        const { rows } = await pool.query<{ reltuples: number }>(
          "SELECT reltuples FROM pg_class WHERE relname = 'analyzed'",
        );
        return Number(rows[0]?.reltuples);
      };
      const until = Date.now() + 5_000;
      while ((await estimate()) !== 5000 && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await estimate()).toBe(5000);
    } finally {
      await stop();
    }
  });
});
