import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
// Either the pool or a client inside a transaction: repositories accept both.
export type Queryable = pg.Pool | pg.PoolClient;

export type PoolOptions = {
  url: string;
  applicationName: string;
  max?: number;
};

export function createPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    application_name: options.applicationName,
    max: options.max ?? 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
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
