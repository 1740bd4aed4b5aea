import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedPostgresUrl, startEmbeddedPostgres } from './embedded';
import {
  createPool,
  isDatabaseReachable,
  type Pool,
  withBatchTransaction,
  withTransaction,
} from './pool';
import { makeTempDir, startTestDatabase, type TestDatabase } from './testing';

let database: TestDatabase;
// PGlite serves every connection from one session and ignores statement timeouts: the tests of
// that run on it whatever engine the rest of the suite runs on.
let embedded: TestDatabase;

beforeAll(async () => {
  database = await startTestDatabase();
  embedded = await startTestDatabase({ engine: 'embedded' });
  for (const { pool } of [database, embedded]) {
    await pool.query('CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL)');
  }
});

afterAll(async () => {
  await database?.stop();
  await embedded?.stop();
});

async function noteIds(pool: Pool = database.pool): Promise<number[]> {
  const { rows } = await pool.query<{ id: number }>('SELECT id FROM notes ORDER BY id');
  return rows.map((row) => row.id);
}

async function deleteNotes(pool: Pool = database.pool): Promise<void> {
  await pool.query('DELETE FROM notes');
}

describe('withTransaction', () => {
  it('commits and returns what the function returned', async () => {
    await deleteNotes();

    const result = await withTransaction(database.pool, async (client) => {
      await client.query('INSERT INTO notes (id, body) VALUES (1, $1), (2, $2)', ['a', 'b']);
      const { rows } = await client.query<{ count: number }>(
        'SELECT count(*)::int AS count FROM notes',
      );
      return rows[0]?.count;
    });

    expect(result).toBe(2);
    expect(await noteIds()).toEqual([1, 2]);
  });

  it('rolls back everything and rethrows the same error when the function throws', async () => {
    await deleteNotes();
    const failure = new Error('changed my mind');

    await expect(
      withTransaction(database.pool, async (client) => {
        await client.query("INSERT INTO notes (id, body) VALUES (1, 'a')");
        await client.query("INSERT INTO notes (id, body) VALUES (2, 'b')");
        throw failure;
      }),
    ).rejects.toBe(failure);

    expect(await noteIds()).toEqual([]);
  });

  it('rolls back when a statement fails', async () => {
    await deleteNotes();
    await database.pool.query("INSERT INTO notes (id, body) VALUES (1, 'kept')");

    await expect(
      withTransaction(database.pool, async (client) => {
        await client.query("UPDATE notes SET body = 'changed' WHERE id = 1");
        await client.query("INSERT INTO notes (id, body) VALUES (1, 'duplicate')");
      }),
    ).rejects.toThrow(/duplicate key/);

    const { rows } = await database.pool.query('SELECT id, body FROM notes');
    expect(rows).toEqual([{ id: 1, body: 'kept' }]);
  });

  it('returns its client to the pool, even after failures', async () => {
    // The test pool holds 4 clients: a leaked one per call would exhaust it by the fifth call.
    for (let attempt = 0; attempt < 8; attempt += 1) {
      await expect(
        withTransaction(database.pool, async () => {
          throw new Error(`attempt ${attempt}`);
        }),
      ).rejects.toThrow(`attempt ${attempt}`);
    }
    await withTransaction(database.pool, async (client) => client.query('SELECT 1'));

    expect(database.pool.totalCount).toBeLessThanOrEqual(4);
    expect(database.pool.idleCount).toBe(database.pool.totalCount);
    expect(database.pool.waitingCount).toBe(0);
  });
});

describe('connections of a pool at rest', () => {
  it('keeps the warm ones open however long they sit idle, and closes the rest', async () => {
    const pool = createPool({
      url: database.url,
      applicationName: 'pool-test',
      max: 4,
      warm: 2,
      idleTimeoutMs: 100,
    });
    try {
      const held = await Promise.all([1, 2, 3, 4].map(() => pool.connect()));
      const pids = await Promise.all(
        held.map(async (client) => (await client.query('SELECT pg_backend_pid() AS pid')).rows[0]),
      );
      for (const client of held) client.release();
      expect(pool.totalCount).toBe(4);

      await new Promise((done) => setTimeout(done, 500));

      expect(pool.totalCount).toBe(2);
      const { rows } = await pool.query('SELECT pg_backend_pid() AS pid');
      expect(pids).toContainEqual(rows[0]);
      expect(pool.totalCount).toBe(2);
    } finally {
      await pool.end();
    }
  });
});

describe('the embedded Postgres behind a pool', () => {
  it('hides an open transaction from the queries of other connections', async () => {
    await deleteNotes(embedded.pool);
    const writer = await embedded.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query("INSERT INTO notes (id, body) VALUES (7, 'uncommitted')");

      // All connections share one WebAssembly Postgres session: only the server holding other
      // queries until the transaction ends keeps them from seeing (or joining) it.
      const reader = embedded.pool.query<{ id: number }>('SELECT id FROM notes');
      // Gives the reader's query time to reach the server while the transaction is open.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await writer.query('ROLLBACK');

      const { rows } = await reader;
      expect(rows).toEqual([]);
    } finally {
      writer.release();
    }
    expect(await noteIds(embedded.pool)).toEqual([]);
  });

  it('lets another connection see a transaction once it commits', async () => {
    await deleteNotes(embedded.pool);
    const writer = await embedded.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query("INSERT INTO notes (id, body) VALUES (8, 'committed')");
      const reader = embedded.pool.query<{ id: number }>('SELECT id FROM notes');
      await new Promise((resolve) => setTimeout(resolve, 200));
      await writer.query('COMMIT');

      const { rows } = await reader;
      expect(rows).toEqual([{ id: 8 }]);
    } finally {
      writer.release();
    }
  });

  it('rolls back the transaction of a connection that drops, and lets the others go on', async () => {
    await deleteNotes(embedded.pool);
    const writer = await embedded.pool.connect();
    await writer.query('BEGIN');
    await writer.query("INSERT INTO notes (id, body) VALUES (9, 'orphaned')");
    const reader = embedded.pool.query<{ id: number }>('SELECT id FROM notes');
    // Destroys the connection instead of returning it: a service crashing mid-transaction.
    writer.release(true);

    const { rows } = await reader;
    expect(rows).toEqual([]);
    expect(await noteIds(embedded.pool)).toEqual([]);
  });

  it('has pgvector', async () => {
    const { rows } = await embedded.pool.query<{ distance: unknown }>(
      "SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector AS distance",
    );
    const distance = rows[0]?.distance;

    expect(typeof distance).toBe('number');
    // Cosine distance: 1 - 17 / (sqrt(14) * sqrt(21)).
    expect(distance).toBeCloseTo(1 - 17 / Math.sqrt(14 * 21), 6);
  });
});

describe('isDatabaseReachable', () => {
  it('is true for a running database', async () => {
    expect(await isDatabaseReachable(database.pool)).toBe(true);
  });

  it('is false, quickly, where nothing listens', async () => {
    const pool = createPool({
      url: embeddedPostgresUrl('127.0.0.1', 1),
      applicationName: 'pool-test',
    });
    try {
      const startedAt = Date.now();
      expect(await isDatabaseReachable(pool)).toBe(false);
      expect(Date.now() - startedAt).toBeLessThan(2_000);
    } finally {
      await pool.end();
    }
  });
});

describe('withTransaction when the database goes away', () => {
  it('fails the transaction instead of crashing the process', async () => {
    const dir = await makeTempDir('pg-gone');
    const postgres = await startEmbeddedPostgres({ dataDir: dir.path, port: 0 });
    const pool = createPool({ url: postgres.url, applicationName: 'pool-test', max: 2 });
    try {
      await expect(
        withTransaction(pool, async (client) => {
          await client.query('SELECT 1');
          await postgres.stop();
          // The dead connection's 'error' event arrives while nothing is querying.
          await new Promise((resolve) => setTimeout(resolve, 200));
          await client.query('SELECT 2');
        }),
      ).rejects.toThrow();
    } finally {
      await pool.end().catch(() => {});
      await dir.remove();
    }
  });
});

// The embedded Postgres ignores statement timeouts, so they are tested on a real server: this
// file's own database when the suite runs on one (DATABASE_URL), otherwise the PostgreSQL that
// every development machine runs.
const MACHINE_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const STATEMENT_TIMEOUT_MS = 300;
const BATCH_STATEMENT_TIMEOUT_MS = 3_000;
const QUERY_CANCELED = '57014';

describe('statement timeouts on a real Postgres', () => {
  let pool: Pool;
  let realPostgresUrl: string;

  beforeAll(async () => {
    realPostgresUrl = database.engine === 'server' ? database.url : MACHINE_POSTGRES_URL;
    const probe = new pg.Client({ connectionString: realPostgresUrl });
    try {
      await probe.connect();
    } catch (error) {
      throw new Error(
        `these tests need a real PostgreSQL: DATABASE_URL (infra/ci/postgres17.sh start), or else one on 127.0.0.1:5432 (user postgres, trust auth): ${error}`,
      );
    } finally {
      await probe.end().catch(() => {});
    }
    pool = createPool({
      url: realPostgresUrl,
      applicationName: 'pool-timeout-test',
      max: 2,
      warm: 0,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      batchStatementTimeoutMs: BATCH_STATEMENT_TIMEOUT_MS,
    });
  });

  afterAll(async () => {
    await pool?.end();
  });

  async function runningSleeps(): Promise<number> {
    const { rows } = await pool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM pg_stat_activity
       WHERE application_name = 'pool-timeout-test' AND state = 'active'
         AND query LIKE 'SELECT pg_sleep%'`,
    );
    return rows[0]?.count ?? -1;
  }

  it('cancels a statement that runs past the timeout, on the server', async () => {
    const started = Date.now();

    await expect(pool.query('SELECT pg_sleep(5)')).rejects.toMatchObject({
      code: QUERY_CANCELED,
      message: 'canceling statement due to statement timeout',
    });

    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await runningSleeps()).toBe(0);
  });

  it('lets batch work run longer, and only inside its own transaction', async () => {
    const slept = await withBatchTransaction(pool, async (client) => {
      await client.query('SELECT pg_sleep(1)');
      const { rows } = await client.query<{ timeout: string }>(
        "SELECT current_setting('statement_timeout') AS timeout",
      );
      return rows[0]?.timeout;
    });
    const { rows } = await pool.query<{ timeout: string }>(
      "SELECT current_setting('statement_timeout') AS timeout",
    );

    expect(slept).toBe(`${BATCH_STATEMENT_TIMEOUT_MS / 1_000}s`);
    expect(rows[0]?.timeout).toBe(`${STATEMENT_TIMEOUT_MS}ms`);
    await expect(pool.query('SELECT pg_sleep(1)')).rejects.toMatchObject({ code: QUERY_CANCELED });
  });

  it('still bounds batch work by its own timeout', async () => {
    const short = createPool({
      url: realPostgresUrl,
      applicationName: 'pool-timeout-test',
      max: 1,
      warm: 0,
      statementTimeoutMs: 100,
      batchStatementTimeoutMs: STATEMENT_TIMEOUT_MS,
    });
    try {
      await expect(
        withBatchTransaction(short, (client) => client.query('SELECT pg_sleep(5)')),
      ).rejects.toMatchObject({ code: QUERY_CANCELED });
    } finally {
      await short.end();
    }
  });

  it('leaves a pool without a timeout unlimited, batch work included', async () => {
    const unlimited = createPool({
      url: realPostgresUrl,
      applicationName: 'pool-timeout-test',
      max: 1,
      warm: 0,
    });
    try {
      const inBatch = await withBatchTransaction(unlimited, async (client) => {
        const { rows } = await client.query<{ timeout: string }>(
          "SELECT current_setting('statement_timeout') AS timeout",
        );
        return rows[0]?.timeout;
      });
      const { rows } = await unlimited.query<{ timeout: string }>(
        "SELECT current_setting('statement_timeout') AS timeout",
      );

      expect(inBatch).toBe('0');
      expect(rows[0]?.timeout).toBe('0');
    } finally {
      await unlimited.end();
    }
  });
});

describe('statement timeouts on the embedded Postgres', () => {
  it('are accepted, so one configuration serves both engines', async () => {
    const timed = createPool({
      url: embedded.url,
      applicationName: 'pool-test',
      max: 1,
      warm: 0,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      batchStatementTimeoutMs: BATCH_STATEMENT_TIMEOUT_MS,
    });
    try {
      const { rows } = await timed.query<{ one: number }>('SELECT 1 AS one');
      const inBatch = await withBatchTransaction(timed, (client) => client.query('SELECT 2'));

      expect(rows).toEqual([{ one: 1 }]);
      expect(inBatch.rowCount).toBe(1);
    } finally {
      await timed.end();
    }
  });
});
