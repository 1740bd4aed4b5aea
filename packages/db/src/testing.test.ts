import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultTestDatabaseEngine, startTestDatabase, type TestDatabase } from './testing';
import { testingEnv } from './testing-env';

const started: TestDatabase[] = [];

afterAll(async () => {
  for (const database of started) await database.stop().catch(() => {});
});

async function start(...args: Parameters<typeof startTestDatabase>): Promise<TestDatabase> {
  const database = await startTestDatabase(...args);
  started.push(database);
  return database;
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function serverOf(url: string): string {
  const { hostname, port } = new URL(url);
  return `${hostname}:${port}`;
}

describe('startTestDatabase', () => {
  it('runs on the server at DATABASE_URL when it is set, and on PGlite otherwise', async () => {
    const database = await start();

    const { rows } = await database.pool.query<{ version: string; name: string }>(
      'SELECT version(), current_database() AS name',
    );
    const serverUrl = testingEnv.DATABASE_URL;
    expect({ engine: database.engine, server: serverOf(database.url), ...rows[0] }).toEqual(
      serverUrl
        ? {
            engine: 'server',
            server: serverOf(serverUrl),
            version: expect.not.stringContaining('PGlite'),
            name: expect.stringMatching(/^jarvis_test_[0-9a-f]{12}$/),
          }
        : {
            engine: 'embedded',
            server: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
            version: expect.stringContaining('PGlite'),
            name: 'postgres',
          },
    );
    expect(database.engine).toBe(defaultTestDatabaseEngine());
  });

  it('gives each caller a database of its own, with pgvector, gone once stopped', async () => {
    const first = await start();
    const second = await start();

    await first.pool.query('CREATE TABLE mine (id int)');
    const { rows } = await second.pool.query<{ exists: boolean }>(
      "SELECT to_regclass('mine') IS NOT NULL AS exists",
    );
    const distance = await second.pool.query<{ distance: number }>(
      "SELECT '[1,0]'::vector <=> '[0,1]'::vector AS distance",
    );
    expect(first.url).not.toBe(second.url);
    expect(rows).toEqual([{ exists: false }]);
    expect(distance.rows).toEqual([{ distance: 1 }]);

    expect(await canConnect(first.url)).toBe(true);
    await first.stop();
    expect(await canConnect(first.url)).toBe(false);
  });

  it('starts the embedded Postgres when asked for it, whatever DATABASE_URL says', async () => {
    const database = await start({ engine: 'embedded' });

    const { rows } = await database.pool.query<{ version: string }>('SELECT version()');
    expect(database.engine).toBe('embedded');
    expect(rows[0]?.version).toContain('PGlite');
  });
});
