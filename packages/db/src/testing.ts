import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from './embedded';
import { createPool, type Pool } from './pool';
import { testingEnv } from './testing-env';

// Test fixtures that need only this package. They live here rather than in the testkit so this
// package's own tests can use them without a dependency cycle; the testkit re-exports them.

export async function makeTempDir(
  label: string,
): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `jarvis-${label}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

// 'server': a database of its own on the PostgreSQL at DATABASE_URL, the engine production runs,
// where row locks and advisory locks race for real. 'embedded': PGlite in this process, the
// database of `make dev`.
export type TestDatabaseEngine = 'server' | 'embedded';

export type TestDatabase = {
  url: string;
  engine: TestDatabaseEngine;
  pool: Pool;
  stop(): Promise<void>;
};

export type TestDatabaseOptions = {
  // By default the server when DATABASE_URL is set. Tests that guard PGlite's own failure modes
  // ask for 'embedded', so they keep running on it whatever the rest of the suite runs on.
  engine?: TestDatabaseEngine;
};

export function defaultTestDatabaseEngine(): TestDatabaseEngine {
  return testingEnv.DATABASE_URL ? 'server' : 'embedded';
}

export async function startTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const engine = options.engine ?? defaultTestDatabaseEngine();
  const database = engine === 'server' ? await createServerDatabase() : await startEmbedded();
  const pool = createPool({ url: database.url, applicationName: 'test', max: 4 });
  return {
    url: database.url,
    engine,
    pool,
    async stop() {
      await pool.end();
      await database.remove();
    },
  };
}

type OwnDatabase = { url: string; remove(): Promise<void> };

// The embedded Postgres (pgvector included) on a free port and a temp folder.
async function startEmbedded(): Promise<OwnDatabase> {
  const dir = await makeTempDir('pg');
  const postgres = await startEmbeddedPostgres({ dataDir: dir.path, port: 0 });
  return {
    url: postgres.url,
    async remove() {
      await postgres.stop();
      await dir.remove();
    },
  };
}

// A fresh database on the server, so test files running in parallel never see each other's
// rows, with pgvector created as infra/postgres/init.sql creates it in production.
async function createServerDatabase(): Promise<OwnDatabase> {
  const serverUrl = testingEnv.DATABASE_URL;
  if (!serverUrl) throw new Error('a test database on a server needs DATABASE_URL');
  const name = `jarvis_test_${randomBytes(6).toString('hex')}`;
  await runOn(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  try {
    await runOn(url.toString(), 'CREATE EXTENSION IF NOT EXISTS vector');
  } catch (error) {
    await runOn(serverUrl, `DROP DATABASE ${name} WITH (FORCE)`);
    throw error;
  }
  return {
    url: url.toString(),
    // FORCE: a service process that a test killed may have left its connections behind.
    remove: () => runOn(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function runOn(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'test-setup' });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
