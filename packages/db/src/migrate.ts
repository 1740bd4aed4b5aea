import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Pool, type PoolClient, withBatchTransaction } from './pool';

export type MigrateOptions = {
  // The service's own schema: each service owns one and never touches another's.
  schema: string;
  // Folder of `NNN_name.sql` files, applied in name order, each once.
  directory: URL;
  // Apply only the files of this set (a restore first rebuilds a schema as its backup had it);
  // unset: every file.
  only?: ReadonlySet<string>;
};

// An applied migration whose file has changed since: the schema the database has is no longer
// the one the files describe, so starting would run code against tables it does not expect.
export class MigrationChangedError extends Error {
  constructor(schema: string, file: string, recorded: string, current: string) {
    super(
      `migration ${schema}/${file} was edited after it was applied (checksum applied ` +
        `${recorded.slice(0, 12)}, file now ${current.slice(0, 12)}): put the file back as it ` +
        'was and make the change in a new migration',
    );
    this.name = 'MigrationChangedError';
  }
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

export async function migrate(pool: Pool, options: MigrateOptions): Promise<string[]> {
  assertSchemaName(options.schema);
  return withBatchTransaction(pool, (client) => migrateWithin(client, options));
}

// The same inside the caller's transaction, so a restore is all or nothing.
export async function migrateWithin(
  client: PoolClient,
  options: MigrateOptions,
): Promise<string[]> {
  assertSchemaName(options.schema);
  const directory = fileURLToPath(options.directory);
  const files = (await readdir(directory)).filter((name) => name.endsWith('.sql')).sort();
  const schema = options.schema;
  // Replicas starting together apply each migration once: the lock serialises them.
  await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`migrate:${schema}`]);
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
       name text PRIMARY KEY,
       applied_at timestamptz NOT NULL DEFAULT now(),
       checksum text
     )`,
  );
  // Installs from before checksums have the table without the column; their rows get the
  // checksum of the file as it is now, the first time this runs.
  await client.query(
    `ALTER TABLE ${schema}.schema_migrations ADD COLUMN IF NOT EXISTS checksum text`,
  );
  const { rows } = await client.query<{ name: string; checksum: string | null }>(
    `SELECT name, checksum FROM ${schema}.schema_migrations`,
  );
  const applied = new Map(rows.map((row) => [row.name, row.checksum]));
  const newlyApplied: string[] = [];
  for (const file of files) {
    const sql = await readFile(join(directory, file), 'utf8');
    const checksum = migrationChecksum(sql);
    if (applied.has(file)) {
      const recorded = applied.get(file);
      if (recorded === null || recorded === undefined) {
        await client.query(`UPDATE ${schema}.schema_migrations SET checksum = $2 WHERE name = $1`, [
          file,
          checksum,
        ]);
      } else if (recorded !== checksum) {
        throw new MigrationChangedError(schema, file, recorded, checksum);
      }
      continue;
    }
    if (options.only && !options.only.has(file)) continue;
    await client.query(sql);
    await client.query(`INSERT INTO ${schema}.schema_migrations (name, checksum) VALUES ($1, $2)`, [
      file,
      checksum,
    ]);
    newlyApplied.push(file);
  }
  return newlyApplied;
}

function assertSchemaName(schema: string): void {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${schema}`);
}
