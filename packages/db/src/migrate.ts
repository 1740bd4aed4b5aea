import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Pool, withBatchTransaction } from './pool';

export type MigrateOptions = {
  // The service's own schema: each service owns one and never touches another's.
  schema: string;
  // Folder of `NNN_name.sql` files, applied in name order, each once.
  directory: URL;
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

export async function migrate(pool: Pool, options: MigrateOptions): Promise<string[]> {
  if (!SCHEMA_NAME.test(options.schema)) throw new Error(`invalid schema name ${options.schema}`);
  const directory = fileURLToPath(options.directory);
  const files = (await readdir(directory)).filter((name) => name.endsWith('.sql')).sort();
  const schema = options.schema;
  return withBatchTransaction(pool, async (client) => {
    // Replicas starting together apply each migration once: the lock serialises them.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ name: string }>(
      `SELECT name FROM ${schema}.schema_migrations`,
    );
    const applied = new Set(rows.map((row) => row.name));
    const newlyApplied: string[] = [];
    for (const file of files) {
      if (applied.has(file)) continue;
      const sql = await readFile(join(directory, file), 'utf8');
      await client.query(sql);
      await client.query(`INSERT INTO ${schema}.schema_migrations (name) VALUES ($1)`, [file]);
      newlyApplied.push(file);
    }
    return newlyApplied;
  });
}
