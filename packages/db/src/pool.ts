import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
// Either the pool or a client inside a transaction: repositories accept both.
export type Queryable = pg.Pool | pg.PoolClient;

export type PoolOptions = {
  url: string;
  applicationName: string;
  max?: number;
  // Connections kept open however long they sit idle (at most `max`); those above it close
  // after `idleTimeoutMs`.
  warm?: number;
  idleTimeoutMs?: number;
  // Longest one statement may run before Postgres cancels it; unset or 0: no limit. Kept under
  // the callers' request timeout, so a request that gave up does not leave its query running.
  statementTimeoutMs?: number;
  // The same for named batch work (withBatchTransaction), which may rightly take longer; unset
  // or 0: no limit.
  batchStatementTimeoutMs?: number;
};

// Set only for pools with a statement timeout: batch work on the others has no limit to lift.
const batchStatementTimeouts = new WeakMap<Pool, number>();

// A turn after the user's pause (minutes, usually) would otherwise find every connection closed
// and open new ones for its parallel queries: each new backend starts with cold caches and loads
// pgvector again, which costs a search many times its own work. A recall runs up to seven
// queries at once.
const WARM_CONNECTIONS = 8;

export function createPool(options: PoolOptions): Pool {
  const max = options.max ?? 10;
  const pool = new pg.Pool({
    connectionString: options.url,
    application_name: options.applicationName,
    max,
    min: Math.min(options.warm ?? WARM_CONNECTIONS, max),
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    // Connections now live for days: keepalives notice a peer that vanished without a word.
    keepAlive: true,
    // A startup parameter of every connection, so no statement runs before it applies. The
    // embedded Postgres accepts it and ignores it.
    statement_timeout: options.statementTimeoutMs || undefined,
  });
  if (options.statementTimeoutMs) {
    batchStatementTimeouts.set(pool, options.batchStatementTimeoutMs ?? 0);
  }
  // An idle client losing its server must not crash the process: the next query reconnects,
  // and the readiness check reports the outage meanwhile.
  pool.on('error', () => {});
  return pool;
}

export async function isDatabaseReachable(pool: Pool): Promise<boolean> {
  try {
    await pool.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

export async function withTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A connection that dies while checked out emits 'error' on its client, which would crash the
  // process with no listener; the failing query reports it, and the client is thrown away.
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

// Named batch work (imports, exports, migrations): one transaction whose statements get the
// pool's batch timeout instead of the one sized for requests.
export async function withBatchTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const timeoutMs = batchStatementTimeouts.get(pool);
  return withTransaction(pool, async (client) => {
    if (timeoutMs !== undefined) {
      // set_config(..., true) is SET LOCAL: the connection's own timeout returns at the end.
      await client.query("SELECT set_config('statement_timeout', $1, true)", [String(timeoutMs)]);
    }
    return fn(client);
  });
}
