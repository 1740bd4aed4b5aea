import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { z } from 'zod';
import {
  BackupFileError,
  type OpenedBackup,
  openBackupFile,
  readBackupLines,
  writeBackupFile,
} from './backup-file';
import { migrateWithin, migrationChecksum } from './migrate';
import { type Pool, type PoolClient, withTransaction } from './pool';

// Backup and restore of the services' schemas over the ordinary wire protocol: every row as
// JSON (row_to_json out, json_populate_recordset in), through plain queries. pg_dump would need
// a client of the server's major or newer beside every install and does not run against the
// embedded PGlite; COPY FROM STDIN does not work through PGlite's wire server either. JSON
// carries every type the schemas use through its text form, pgvector's included, so one
// implementation serves the compose Postgres, a DATABASE_URL and `make dev`'s PGlite alike.
//
// A backup holds, per schema, the migrations it had (name and checksum), each table's columns
// (generated ones left out: they are computed again) and row count, its sequences' positions,
// and the rows; then any key files. A restore rebuilds each schema by its backup's own
// migrations, loads the rows, then applies the release's newer migrations, all in one
// transaction: an older backup restores into a newer release, and a failure changes nothing.

const FETCH_ROWS = 1_000;
const INSERT_ROWS = 500;
const INSERT_BYTES = 4 * 1024 * 1024;

const BackupManifest = z.object({
  createdAt: z.string(),
  schemas: z.array(
    z.object({
      name: z.string(),
      migrations: z.array(z.object({ name: z.string(), checksum: z.string().nullable() })),
      tables: z.array(
        z.object({
          name: z.string(),
          columns: z.array(z.string()).min(1),
          rows: z.number().int().min(0),
        }),
      ),
      sequences: z.array(
        z.object({ name: z.string(), lastValue: z.string(), isCalled: z.boolean() }),
      ),
    }),
  ),
  keyFiles: z.array(z.object({ name: z.string() })),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

const KeyFileLine = z.object({ name: z.string(), content: z.base64() });

// A file the database cannot live without, such as the key that encrypts stored secrets.
export type KeyFile = { name: string; content: Buffer };

export type WriteBackupOptions = {
  // The schemas to back up, each with its bookkeeping table (schema_migrations).
  schemas: readonly string[];
  // Encrypts the backup; unset: it is written in the clear.
  passphrase?: string | undefined;
  // Key files to keep with the data; only in an encrypted backup.
  keyFiles?: readonly KeyFile[];
};

export type BackupSummary = { checksum: string; manifest: BackupManifest };

// A backup that would defeat its own purpose, or a restore that would destroy data.
export class BackupRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupRefusedError';
  }
}

export async function writeBackup(
  pool: Pool,
  out: Writable,
  options: WriteBackupOptions,
): Promise<BackupSummary> {
  const keyFiles = options.keyFiles ?? [];
  const firstKey = keyFiles[0];
  // The key beside the secrets it encrypts, in the clear, would hand both to whoever gets the file.
  if (firstKey && options.passphrase === undefined) {
    throw new BackupRefusedError(
      `the backup would hold the key file ${firstKey.name} beside the secrets it encrypts: ` +
        'give a passphrase (JARVIS_BACKUP_PASSPHRASE) to encrypt it',
    );
  }
  const client = await pool.connect();
  try {
    // One snapshot for every schema: the backup is consistent across services.
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const manifest: BackupManifest = {
      createdAt: new Date().toISOString(),
      schemas: [],
      keyFiles: keyFiles.map((file) => ({ name: file.name })),
    };
    for (const schema of options.schemas)
      manifest.schemas.push(await describeSchema(client, schema));
    const checksum = await writeBackupFile(
      out,
      backupLines(client, manifest, keyFiles),
      options.passphrase,
    );
    await client.query('COMMIT');
    return { checksum, manifest };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

async function describeSchema(
  client: PoolClient,
  schema: string,
): Promise<BackupManifest['schemas'][number]> {
  const bookkeeping = await client.query<{ exists: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS exists',
    [`${schema}.schema_migrations`],
  );
  if (!bookkeeping.rows[0]?.exists) {
    throw new BackupRefusedError(`schema ${schema} has no migrations: has its service started?`);
  }
  const migrations = await client.query<{ name: string; checksum: string | null }>(
    `SELECT name, checksum FROM ${quote(schema)}.schema_migrations ORDER BY name`,
  );
  const tables = await client.query<{ name: string; columns: string[] }>(
    `SELECT c.relname AS name,
            array_agg(a.attname::text ORDER BY a.attnum) AS columns
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
        AND a.attgenerated = ''
      GROUP BY c.relname
      ORDER BY c.relname`,
    [schema],
  );
  const described = [];
  for (const table of tables.rows) {
    const count = await client.query<{ count: string }>(
      `SELECT count(*) AS count FROM ${quote(schema)}.${quote(table.name)}`,
    );
    described.push({ ...table, rows: Number(count.rows[0]?.count ?? 0) });
  }
  const sequenceNames = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'S' ORDER BY c.relname`,
    [schema],
  );
  const sequences = [];
  for (const { name } of sequenceNames.rows) {
    const position = await client.query<{ lastValue: string; isCalled: boolean }>(
      `SELECT last_value::text AS "lastValue", is_called AS "isCalled"
         FROM ${quote(schema)}.${quote(name)}`,
    );
    const row = position.rows[0];
    if (row) sequences.push({ name, ...row });
  }
  return { name: schema, migrations: migrations.rows, tables: described, sequences };
}

async function* backupLines(
  client: PoolClient,
  manifest: BackupManifest,
  keyFiles: readonly KeyFile[],
): AsyncIterable<string> {
  yield JSON.stringify(manifest);
  for (const schema of manifest.schemas) {
    for (const table of schema.tables) {
      const columns = table.columns.map(quote).join(', ');
      // A cursor, so a large table streams instead of arriving whole.
      await client.query(
        `DECLARE backup_rows NO SCROLL CURSOR FOR
           SELECT row_to_json(r)::text AS row
             FROM (SELECT ${columns} FROM ${quote(schema.name)}.${quote(table.name)}) r`,
      );
      let sent = 0;
      for (;;) {
        const { rows } = await client.query<{ row: string }>(
          `FETCH ${FETCH_ROWS} FROM backup_rows`,
        );
        for (const row of rows) yield row.row;
        sent += rows.length;
        if (rows.length < FETCH_ROWS) break;
      }
      await client.query('CLOSE backup_rows');
      // The snapshot holds still, so a difference means rows went missing on the way.
      if (sent !== table.rows) {
        throw new Error(`${schema.name}.${table.name}: counted ${table.rows} rows, read ${sent}`);
      }
    }
  }
  for (const file of keyFiles) {
    yield JSON.stringify({ name: file.name, content: file.content.toString('base64') });
  }
}

export type RestoreOptions = {
  passphrase?: string | undefined;
  // Each schema's migrations folder in this release.
  migrations: Readonly<Record<string, URL>>;
  // Replace schemas that hold data; without it such a target is refused.
  force?: boolean;
};

export type RestoreSummary = {
  manifest: BackupManifest;
  // Migrations of this release newer than the backup, applied after its rows.
  upgraded: Record<string, string[]>;
  keyFiles: KeyFile[];
};

// Checks the whole file and everything it needs before the first statement that changes the
// database; then restores in one transaction.
export async function restoreBackup(
  pool: Pool,
  path: string,
  options: RestoreOptions,
): Promise<RestoreSummary> {
  const backup = await openBackupFile(path, options.passphrase);
  const { manifest, keyFiles } = await readWholeBackup(backup);
  await checkMigrations(manifest, options.migrations);
  const upgraded: Record<string, string[]> = {};
  await withTransaction(pool, async (client) => {
    if (!options.force) await refuseNonEmptyTarget(client, manifest);
    const deferred: ForeignKey[] = [];
    for (const schema of manifest.schemas) {
      await client.query(`DROP SCHEMA IF EXISTS ${quote(schema.name)} CASCADE`);
      await migrateWithin(client, {
        schema: schema.name,
        directory: migrationsOf(options.migrations, schema.name),
        only: new Set(schema.migrations.map((migration) => migration.name)),
      });
      deferred.push(...(await deferForeignKeys(client, schema.name)));
    }
    await loadRows(client, backup, manifest);
    await client.query('SET CONSTRAINTS ALL IMMEDIATE');
    await restoreForeignKeys(client, deferred);
    for (const schema of manifest.schemas) {
      for (const sequence of schema.sequences) {
        await client.query('SELECT setval($1, $2::bigint, $3)', [
          `${quote(schema.name)}.${quote(sequence.name)}`,
          sequence.lastValue,
          sequence.isCalled,
        ]);
      }
      for (const table of schema.tables) {
        const { rows } = await client.query<{ count: string }>(
          `SELECT count(*) AS count FROM ${quote(schema.name)}.${quote(table.name)}`,
        );
        const count = Number(rows[0]?.count ?? 0);
        if (count !== table.rows) {
          throw new Error(
            `${schema.name}.${table.name}: backup has ${table.rows} rows, restored ${count}`,
          );
        }
      }
    }
    for (const schema of manifest.schemas) {
      upgraded[schema.name] = await migrateWithin(client, {
        schema: schema.name,
        directory: migrationsOf(options.migrations, schema.name),
      });
    }
  });
  return { manifest, upgraded, keyFiles };
}

// Reads the payload once without the database: its structure, every row's JSON and the row
// counts must all be right before a restore begins.
async function readWholeBackup(
  backup: OpenedBackup,
): Promise<{ manifest: BackupManifest; keyFiles: KeyFile[] }> {
  let manifest: BackupManifest | undefined;
  const expected: number[] = [];
  let index = 0;
  let seen = 0;
  const keyFiles: KeyFile[] = [];
  await readBackupLines(backup, async (line) => {
    const value = parseJson(line, backup.path);
    if (!manifest) {
      const parsed = BackupManifest.safeParse(value);
      if (!parsed.success) throw malformed(backup.path, 'its manifest');
      manifest = parsed.data;
      for (const schema of manifest.schemas) {
        for (const table of schema.tables) expected.push(table.rows);
      }
      return;
    }
    while (index < expected.length && seen === expected[index]) {
      index += 1;
      seen = 0;
    }
    if (index < expected.length) {
      if (typeof value !== 'object' || value === null) throw malformed(backup.path, 'a row');
      seen += 1;
      return;
    }
    const keyFile = KeyFileLine.safeParse(value);
    if (!keyFile.success) throw malformed(backup.path, 'a key file');
    keyFiles.push({
      name: keyFile.data.name,
      content: Buffer.from(keyFile.data.content, 'base64'),
    });
  });
  while (index < expected.length && seen === expected[index]) {
    index += 1;
    seen = 0;
  }
  if (!manifest || index < expected.length || keyFiles.length !== manifest.keyFiles.length) {
    throw malformed(backup.path, 'fewer rows than its manifest counts');
  }
  return { manifest, keyFiles };
}

async function checkMigrations(
  manifest: BackupManifest,
  migrations: Readonly<Record<string, URL>>,
): Promise<void> {
  for (const schema of manifest.schemas) {
    const directory = fileURLToPath(migrationsOf(migrations, schema.name));
    const files = new Set(await readdir(directory));
    for (const migration of schema.migrations) {
      if (!files.has(migration.name)) {
        throw new BackupRefusedError(
          `the backup's schema ${schema.name} has migration ${migration.name}, which this ` +
            'release does not have: restore it with the release that made it, or a newer one',
        );
      }
      const current = migrationChecksum(await readFile(join(directory, migration.name), 'utf8'));
      if (migration.checksum !== null && migration.checksum !== current) {
        throw new BackupRefusedError(
          `migration ${schema.name}/${migration.name} differs from the one the backup's data ` +
            'was written under: restore with the release that made the backup',
        );
      }
    }
  }
}

function migrationsOf(migrations: Readonly<Record<string, URL>>, schema: string): URL {
  const directory = migrations[schema];
  if (!directory) throw new BackupRefusedError(`no migrations folder for schema ${schema}`);
  return directory;
}

async function refuseNonEmptyTarget(client: PoolClient, manifest: BackupManifest): Promise<void> {
  for (const schema of manifest.schemas) {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
        ORDER BY c.relname`,
      [schema.name],
    );
    for (const table of tables) {
      const { rows } = await client.query<{ hasRows: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${quote(schema.name)}.${quote(table.name)}) AS "hasRows"`,
      );
      if (rows[0]?.hasRows) {
        throw new BackupRefusedError(
          `the database already holds data (${schema.name}.${table.name}): restore into a fresh ` +
            'install, or force it to replace everything there',
        );
      }
    }
  }
}

type ForeignKey = { table: string; name: string; deferrable: boolean; deferred: boolean };

// Rows load table by table in batches, and a table may refer to itself (a fact to its
// successor) or to a table that loads after it: the checks wait until every row is in.
// Returns them as they were, for restoreForeignKeys.
async function deferForeignKeys(client: PoolClient, schema: string): Promise<ForeignKey[]> {
  const { rows } = await client.query<ForeignKey>(
    `SELECT conrelid::regclass::text AS table, conname AS name,
            condeferrable AS deferrable, condeferred AS deferred
       FROM pg_constraint
      WHERE contype = 'f' AND connamespace = $1::regnamespace`,
    [schema],
  );
  for (const key of rows) {
    await client.query(
      `ALTER TABLE ${key.table} ALTER CONSTRAINT ${quote(key.name)} DEFERRABLE INITIALLY DEFERRED`,
    );
  }
  return rows;
}

async function restoreForeignKeys(client: PoolClient, keys: readonly ForeignKey[]): Promise<void> {
  for (const key of keys) {
    const mode = !key.deferrable
      ? 'NOT DEFERRABLE'
      : `DEFERRABLE INITIALLY ${key.deferred ? 'DEFERRED' : 'IMMEDIATE'}`;
    await client.query(`ALTER TABLE ${key.table} ALTER CONSTRAINT ${quote(key.name)} ${mode}`);
  }
}

async function loadRows(
  client: PoolClient,
  backup: OpenedBackup,
  manifest: BackupManifest,
): Promise<void> {
  const tables = manifest.schemas.flatMap((schema) =>
    schema.tables.map((table) => ({ schema: schema.name, ...table })),
  );
  let index = 0;
  let seen = 0;
  let batch: string[] = [];
  let batchBytes = 0;
  let isManifest = true;
  const flush = async () => {
    const table = tables[index];
    if (!table || batch.length === 0) return;
    const name = `${quote(table.schema)}.${quote(table.name)}`;
    const columns = table.columns.map(quote).join(', ');
    // OVERRIDING SYSTEM VALUE: identity columns (a message's seq) keep their stored values.
    await client.query(
      `INSERT INTO ${name} (${columns}) OVERRIDING SYSTEM VALUE
       SELECT ${columns} FROM json_populate_recordset(NULL::${name}, $1::json)`,
      [`[${batch.join(',')}]`],
    );
    batch = [];
    batchBytes = 0;
  };
  const skipFinished = () => {
    while (index < tables.length && seen === tables[index]?.rows) {
      index += 1;
      seen = 0;
    }
  };
  await readBackupLines(backup, async (line) => {
    if (isManifest) {
      isManifest = false;
      skipFinished();
      return;
    }
    if (index >= tables.length) return;
    batch.push(line);
    batchBytes += line.length;
    seen += 1;
    if (seen === tables[index]?.rows || batch.length >= INSERT_ROWS || batchBytes >= INSERT_BYTES) {
      await flush();
    }
    skipFinished();
  });
}

function quote(identifier: string): string {
  return pg.escapeIdentifier(identifier);
}

function parseJson(line: string, path: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw malformed(path, 'a line that is not JSON');
  }
}

function malformed(path: string, what: string): BackupFileError {
  return new BackupFileError(`${path} is malformed (${what}); nothing was restored`);
}
