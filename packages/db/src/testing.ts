import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from './embedded';
import { createPool, type Pool } from './pool';

// Test fixtures that need only this package. They live here rather than in the testkit so this
// package's own tests can use them without a dependency cycle; the testkit re-exports them.

export async function makeTempDir(
  label: string,
): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `jarvis-${label}-`));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

export type TestDatabase = { url: string; pool: Pool; stop(): Promise<void> };

// The embedded Postgres (pgvector included) in this process, on a free port and a temp folder.
export async function startTestDatabase(): Promise<TestDatabase> {
  const dir = await makeTempDir('pg');
  const postgres = await startEmbeddedPostgres({ dataDir: dir.path, port: 0 });
  const pool = createPool({ url: postgres.url, applicationName: 'test', max: 4 });
  return {
    url: postgres.url,
    pool,
    async stop() {
      await pool.end();
      await postgres.stop();
      await dir.remove();
    },
  };
}
