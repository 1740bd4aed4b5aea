import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BackupRefusedError, type KeyFile, restoreBackup, writeBackup } from './backup';
import { BackupFileError } from './backup-file';
import { migrate } from './migrate';
import { makeTempDir, startTestDatabase, type TestDatabase } from './testing';

const SCHEMA = 'backup_test';

// Every kind of column the services' schemas hold: identity, pgvector, a generated tsvector,
// jsonb, arrays, bytea, numeric, timestamptz, and a table that refers to itself.
const MIGRATIONS = {
  '001_notes.sql': `
    CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;
    CREATE TABLE ${SCHEMA}.notes (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      body text NOT NULL,
      embedding vector(3),
      tags text[] NOT NULL DEFAULT '{}',
      metadata jsonb NOT NULL DEFAULT '{}',
      raw bytea,
      cost numeric(20, 9),
      created_at timestamptz NOT NULL DEFAULT now(),
      successor uuid REFERENCES ${SCHEMA}.notes (id),
      search tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED
    );`,
  '002_links.sql': `
    CREATE TABLE ${SCHEMA}.links (
      note_id uuid NOT NULL REFERENCES ${SCHEMA}.notes (id) ON DELETE CASCADE,
      url text NOT NULL
    );`,
};
const NOTES = 1_200;

let database: TestDatabase;
let dir: { path: string; remove(): Promise<void> };
let migrations: URL;

beforeAll(async () => {
  database = await startTestDatabase();
  dir = await makeTempDir('backup');
  migrations = pathToFileURL(`${join(dir.path, 'migrations')}/`);
  await mkdir(join(dir.path, 'migrations'));
  for (const [name, sql] of Object.entries(MIGRATIONS)) {
    await writeFile(join(dir.path, 'migrations', name), sql);
  }
});

afterAll(async () => {
  await database?.stop();
  await dir?.remove();
});

async function seed(): Promise<void> {
  await database.pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await migrate(database.pool, { schema: SCHEMA, directory: migrations });
  // Each note points to the next one, which loads later: the restore must wait for it.
  await database.pool.query(
    `INSERT INTO ${SCHEMA}.notes (id, body, embedding, tags, metadata, raw, cost, created_at)
     SELECT ('00000000-0000-0000-0000-' || lpad(i::text, 12, '0'))::uuid,
            'note ' || i || E' with a tab\\t, a newline\\n and a quote "' || i,
            CASE WHEN i % 3 = 0 THEN NULL ELSE ('[' || i || ', 0.5, -1.25]')::vector END,
            ARRAY['tag ' || i, 'x,y'],
            jsonb_build_object('n', i, 'nested', jsonb_build_object('s', 'é ✓')),
            decode(lpad(to_hex(i), 8, '0'), 'hex'),
            i / 7.0,
            '2026-01-02T03:04:05.123456Z'::timestamptz + i * interval '1 second'
       FROM generate_series(1, $1) i`,
    [NOTES],
  );
  await database.pool.query(
    `UPDATE ${SCHEMA}.notes SET successor = ('00000000-0000-0000-0000-' || lpad((seq + 1)::text, 12, '0'))::uuid
      WHERE seq < $1`,
    [NOTES],
  );
  await database.pool.query(
    `INSERT INTO ${SCHEMA}.links (note_id, url) SELECT id, 'https://example.com/' || seq FROM ${SCHEMA}.notes WHERE seq % 2 = 0`,
  );
}

async function contents(): Promise<string[]> {
  const { rows } = await database.pool.query<{ row: string }>(
    `SELECT row_to_json(n)::text AS row FROM ${SCHEMA}.notes n ORDER BY seq`,
  );
  const links = await database.pool.query<{ row: string }>(
    `SELECT row_to_json(l)::text AS row FROM ${SCHEMA}.links l ORDER BY url`,
  );
  return [...rows.map((row) => row.row), ...links.rows.map((row) => row.row)];
}

async function backUp(
  name: string,
  options: { passphrase?: string; keyFiles?: KeyFile[] } = {},
): Promise<string> {
  const path = join(dir.path, name);
  const out = createWriteStream(path);
  await writeBackup(database.pool, out, { schemas: [SCHEMA], ...options });
  out.end();
  await finished(out);
  return path;
}

async function wipe(): Promise<void> {
  await database.pool.query(`DROP SCHEMA ${SCHEMA} CASCADE`);
}

async function schemaExists(): Promise<boolean> {
  const { rows } = await database.pool.query<{ exists: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists',
    [SCHEMA],
  );
  return rows[0]?.exists === true;
}

describe('backup and restore', () => {
  it('restores every row and column exactly, and the identity goes on where it was', async () => {
    await seed();
    const before = await contents();
    const path = await backUp('plain.backup');

    await wipe();
    const summary = await restoreBackup(database.pool, path, {
      migrations: { [SCHEMA]: migrations },
    });

    expect(await contents()).toEqual(before);
    expect(summary.manifest.schemas[0]?.tables).toEqual([
      expect.objectContaining({ name: 'links', rows: NOTES / 2 }),
      expect.objectContaining({ name: 'notes', rows: NOTES }),
    ]);
    expect(summary.upgraded).toEqual({ [SCHEMA]: [] });
    const next = await database.pool.query<{ seq: string }>(
      `INSERT INTO ${SCHEMA}.notes (id, body) VALUES (gen_random_uuid(), 'new') RETURNING seq`,
    );
    expect(next.rows[0]?.seq).toBe(String(NOTES + 1));
    // The generated column was computed again from the restored text.
    const search = await database.pool.query(
      `SELECT count(*)::int AS count FROM ${SCHEMA}.notes WHERE search @@ to_tsquery('english', 'newline')`,
    );
    expect(search.rows).toEqual([{ count: NOTES }]);
    // The foreign keys are back to what the migrations made.
    const keys = await database.pool.query(
      `SELECT conname, condeferrable FROM pg_constraint
        WHERE contype = 'f' AND connamespace = $1::regnamespace ORDER BY conname`,
      [SCHEMA],
    );
    expect(keys.rows).toEqual([
      { conname: 'links_note_id_fkey', condeferrable: false },
      { conname: 'notes_successor_fkey', condeferrable: false },
    ]);
  });

  it('restores an older backup into a newer release: its rows, then the new migrations', async () => {
    await seed();
    const before = await contents();
    const path = await backUp('older.backup');
    const newer = await makeTempDir('newer-migrations');
    try {
      for (const [name, sql] of Object.entries(MIGRATIONS)) {
        await writeFile(join(newer.path, name), sql);
      }
      await writeFile(
        join(newer.path, '003_pinned.sql'),
        `ALTER TABLE ${SCHEMA}.notes ADD COLUMN pinned boolean NOT NULL DEFAULT false;`,
      );
      await wipe();

      const summary = await restoreBackup(database.pool, path, {
        migrations: { [SCHEMA]: pathToFileURL(`${newer.path}/`) },
      });

      expect(summary.upgraded).toEqual({ [SCHEMA]: ['003_pinned.sql'] });
      const pinned = await database.pool.query(
        `SELECT count(*)::int AS count FROM ${SCHEMA}.notes WHERE NOT pinned`,
      );
      expect(pinned.rows).toEqual([{ count: NOTES }]);
      await database.pool.query(`ALTER TABLE ${SCHEMA}.notes DROP COLUMN pinned`);
      expect(await contents()).toEqual(before);
    } finally {
      await newer.remove();
    }
  });

  it('refuses a file with one byte flipped before touching the database, even when forced', async () => {
    await seed();
    const before = await contents();
    const path = await backUp('flipped.backup');
    const bytes = await readFile(path);
    const middle = Math.floor(bytes.length / 2);
    bytes[middle] = (bytes[middle] ?? 0) ^ 0x01;
    await writeFile(path, bytes);

    await expect(
      restoreBackup(database.pool, path, { migrations: { [SCHEMA]: migrations }, force: true }),
    ).rejects.toThrow(/is damaged: its checksum does not match/);
    expect(await contents()).toEqual(before);

    await wipe();
    await expect(
      restoreBackup(database.pool, path, { migrations: { [SCHEMA]: migrations } }),
    ).rejects.toBeInstanceOf(BackupFileError);
    expect(await schemaExists()).toBe(false);
  });

  it('encrypts with a passphrase, and refuses a wrong or missing one before touching anything', async () => {
    await seed();
    const before = await contents();
    const path = await backUp('encrypted.backup', { passphrase: 'correct horse battery' });
    // Nothing of the rows is readable in the file.
    expect((await readFile(path)).includes('https://example.com/')).toBe(false);
    await wipe();

    await expect(
      restoreBackup(database.pool, path, {
        migrations: { [SCHEMA]: migrations },
        passphrase: 'wrong horse battery',
      }),
    ).rejects.toThrow(/wrong passphrase/);
    await expect(
      restoreBackup(database.pool, path, { migrations: { [SCHEMA]: migrations } }),
    ).rejects.toThrow(/is encrypted: give its passphrase/);
    expect(await schemaExists()).toBe(false);

    await restoreBackup(database.pool, path, {
      migrations: { [SCHEMA]: migrations },
      passphrase: 'correct horse battery',
    });
    expect(await contents()).toEqual(before);
  });

  it('refuses an encrypted body changed on purpose, with its checksum made to match', async () => {
    await seed();
    const path = await backUp('tampered.backup', { passphrase: 'correct horse battery' });
    const bytes = await readFile(path);
    const trailerStart = bytes.lastIndexOf('JARVIS-BACKUP-END');
    const target = trailerStart - 10;
    bytes[target] = (bytes[target] ?? 0) ^ 0x01;
    const checksum = createHash('sha256').update(bytes.subarray(0, trailerStart)).digest('hex');
    bytes.write(checksum, trailerStart + 'JARVIS-BACKUP-END sha256='.length, 'latin1');
    await writeFile(path, bytes);
    await wipe();

    await expect(
      restoreBackup(database.pool, path, {
        migrations: { [SCHEMA]: migrations },
        passphrase: 'correct horse battery',
      }),
    ).rejects.toThrow(/is damaged/);
    expect(await schemaExists()).toBe(false);
  });

  it('refuses to restore over data unless forced, and then replaces it', async () => {
    await seed();
    const before = await contents();
    const path = await backUp('over.backup');
    await database.pool.query(`DELETE FROM ${SCHEMA}.links WHERE url LIKE '%0'`);
    const changed = await contents();

    await expect(
      restoreBackup(database.pool, path, { migrations: { [SCHEMA]: migrations } }),
    ).rejects.toThrow(`the database already holds data (${SCHEMA}.links)`);
    expect(await contents()).toEqual(changed);

    await restoreBackup(database.pool, path, { migrations: { [SCHEMA]: migrations }, force: true });
    expect(await contents()).toEqual(before);
  });

  it('refuses a backup from a newer release, naming the migration this one lacks', async () => {
    await seed();
    const path = await backUp('newer.backup');
    const older = await makeTempDir('older-migrations');
    try {
      await writeFile(join(older.path, '001_notes.sql'), MIGRATIONS['001_notes.sql']);
      await wipe();
      await expect(
        restoreBackup(database.pool, path, {
          migrations: { [SCHEMA]: pathToFileURL(`${older.path}/`) },
        }),
      ).rejects.toThrow(`the backup's schema ${SCHEMA} has migration 002_links.sql`);
      expect(await schemaExists()).toBe(false);
    } finally {
      await older.remove();
    }
  });

  it('keeps a key file only in an encrypted backup, and gives it back on restore', async () => {
    await seed();
    const keyFiles = [{ name: 'secret.key', content: Buffer.from([0, 1, 2, 254, 255]) }];
    await expect(backUp('key-clear.backup', { keyFiles })).rejects.toBeInstanceOf(
      BackupRefusedError,
    );

    const path = await backUp('key.backup', { keyFiles, passphrase: 'correct horse battery' });
    await wipe();
    const summary = await restoreBackup(database.pool, path, {
      migrations: { [SCHEMA]: migrations },
      passphrase: 'correct horse battery',
    });
    expect(summary.keyFiles).toEqual(keyFiles);
  });
});
