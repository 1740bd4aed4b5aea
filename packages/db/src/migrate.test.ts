import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MigrationChangedError, migrate, migrationChecksum } from './migrate';
import { makeTempDir, startTestDatabase, type TestDatabase } from './testing';

let database: TestDatabase;
let schemaCount = 0;
let removeDirs: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await startTestDatabase();
});

afterEach(async () => {
  for (const remove of removeDirs) await remove();
  removeDirs = [];
});

afterAll(async () => {
  await database?.stop();
});

// Every test migrates its own schema, so tests never see each other's tables.
function nextSchema(): string {
  schemaCount += 1;
  return `migrate_test_${schemaCount}`;
}

type MigrationDir = { url: URL; write(name: string, sql: string): Promise<void> };

async function createMigrationDir(files: Record<string, string>): Promise<MigrationDir> {
  const dir = await makeTempDir('migrations');
  removeDirs.push(dir.remove);
  const write = (name: string, sql: string) => writeFile(join(dir.path, name), sql);
  for (const [name, sql] of Object.entries(files)) await write(name, sql);
  return { url: pathToFileURL(`${dir.path}/`), write };
}

async function appliedNames(schema: string): Promise<string[]> {
  const { rows } = await database.pool.query<{ name: string }>(
    `SELECT name FROM ${schema}.schema_migrations ORDER BY name`,
  );
  return rows.map((row) => row.name);
}

async function relationExists(name: string): Promise<boolean> {
  const { rows } = await database.pool.query<{ exists: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS exists',
    [name],
  );
  return rows[0]?.exists === true;
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await database.pool.query<{ exists: boolean }>(
    'SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS exists',
    [schema],
  );
  return rows[0]?.exists === true;
}

describe('migrate', () => {
  it('applies .sql files in name order, each exactly once', async () => {
    const schema = nextSchema();
    // Written out of order, and each file depends on the one before it.
    const dir = await createMigrationDir({
      '010_seed.sql': `INSERT INTO ${schema}.items (id, note) VALUES (1, 'seeded');`,
      '002_add_note.sql': `ALTER TABLE ${schema}.items ADD COLUMN note text;`,
      '001_create_items.sql': `CREATE TABLE ${schema}.items (id integer PRIMARY KEY);`,
      'README.md': 'not a migration',
    });

    const first = await migrate(database.pool, { schema, directory: dir.url });
    expect(first).toEqual(['001_create_items.sql', '002_add_note.sql', '010_seed.sql']);

    // The seed would fail on its primary key if it ran again.
    const second = await migrate(database.pool, { schema, directory: dir.url });
    expect(second).toEqual([]);

    await dir.write('011_more.sql', `INSERT INTO ${schema}.items (id, note) VALUES (2, 'more');`);
    const third = await migrate(database.pool, { schema, directory: dir.url });
    expect(third).toEqual(['011_more.sql']);

    expect(await appliedNames(schema)).toEqual([
      '001_create_items.sql',
      '002_add_note.sql',
      '010_seed.sql',
      '011_more.sql',
    ]);
    const { rows } = await database.pool.query(`SELECT id, note FROM ${schema}.items ORDER BY id`);
    expect(rows).toEqual([
      { id: 1, note: 'seeded' },
      { id: 2, note: 'more' },
    ]);
  });

  it('keeps schemas apart: the same files apply once per schema', async () => {
    const first = nextSchema();
    const second = nextSchema();
    const dirFirst = await createMigrationDir({
      '001_create.sql': `CREATE TABLE ${first}.things (id integer);`,
    });
    const dirSecond = await createMigrationDir({
      '001_create.sql': `CREATE TABLE ${second}.things (id integer);`,
    });

    expect(await migrate(database.pool, { schema: first, directory: dirFirst.url })).toEqual([
      '001_create.sql',
    ]);
    expect(await migrate(database.pool, { schema: second, directory: dirSecond.url })).toEqual([
      '001_create.sql',
    ]);
    expect(await relationExists(`${first}.things`)).toBe(true);
    expect(await relationExists(`${second}.things`)).toBe(true);
  });

  it.each([
    'Uppercase',
    'has-dash',
    '1starts_with_digit',
    'x; DROP SCHEMA public CASCADE',
    '',
  ])('rejects the schema name %j before touching the database', async (schema) => {
    const dir = await createMigrationDir({ '001.sql': 'SELECT 1;' });

    await expect(migrate(database.pool, { schema, directory: dir.url })).rejects.toThrow(
      `invalid schema name ${schema}`,
    );
    expect(await schemaExists(schema)).toBe(false);
  });

  it('rolls a failing migration back entirely, with every file of the same run', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({
      '001_first.sql': `CREATE TABLE ${schema}.first (id integer);`,
    });
    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual(['001_first.sql']);

    await dir.write('002_second.sql', `CREATE TABLE ${schema}.second (id integer);`);
    // The table is created, then the next statement of the same file fails.
    await dir.write(
      '003_broken.sql',
      `CREATE TABLE ${schema}.third (id integer);
       INSERT INTO ${schema}.does_not_exist VALUES (1);`,
    );

    await expect(migrate(database.pool, { schema, directory: dir.url })).rejects.toThrow(
      /does_not_exist/,
    );
    expect(await appliedNames(schema)).toEqual(['001_first.sql']);
    expect(await relationExists(`${schema}.second`)).toBe(false);
    expect(await relationExists(`${schema}.third`)).toBe(false);

    // Nothing of the failed run was recorded, so the fixed files all apply next time.
    await dir.write('003_broken.sql', `CREATE TABLE ${schema}.third (id integer);`);
    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual([
      '002_second.sql',
      '003_broken.sql',
    ]);
    expect(await relationExists(`${schema}.third`)).toBe(true);
  });

  it('leaves no trace of a new schema whose first migration fails', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({
      '001_broken.sql': `CREATE TABLE ${schema}.items (id integer); SELECT 1 / 0;`,
    });

    await expect(migrate(database.pool, { schema, directory: dir.url })).rejects.toThrow(
      /division by zero/,
    );
    expect(await schemaExists(schema)).toBe(false);
  });

  it('applies each file once when two replicas migrate at the same time', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({
      '001_create.sql': `CREATE TABLE ${schema}.items (id integer PRIMARY KEY);`,
      // Fails on the primary key if a second migrator runs it too.
      '002_seed.sql': `INSERT INTO ${schema}.items (id) VALUES (1), (2);`,
    });

    const results = await Promise.all([
      migrate(database.pool, { schema, directory: dir.url }),
      migrate(database.pool, { schema, directory: dir.url }),
    ]);

    expect(results.flat().sort()).toEqual(['001_create.sql', '002_seed.sql']);
    expect(results.map((result) => result.length).sort()).toEqual([0, 2]);
    expect(await appliedNames(schema)).toEqual(['001_create.sql', '002_seed.sql']);
    const { rows } = await database.pool.query(
      `SELECT count(*)::int AS count FROM ${schema}.items`,
    );
    expect(rows).toEqual([{ count: 2 }]);
  });

  it('accepts an empty directory and only creates the bookkeeping table', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({});

    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual([]);
    expect(await appliedNames(schema)).toEqual([]);
  });

  it('fails when the directory does not exist', async () => {
    const schema = nextSchema();
    const dir = await makeTempDir('migrations-gone');
    await rm(dir.path, { recursive: true, force: true });

    await expect(
      migrate(database.pool, { schema, directory: pathToFileURL(dir.path) }),
    ).rejects.toThrow(/ENOENT/);
    expect(await schemaExists(schema)).toBe(false);
  });

  it('stops with a message naming the file when an applied migration was edited', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({
      '001_create.sql': `CREATE TABLE ${schema}.items (id integer);`,
    });
    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual([
      '001_create.sql',
    ]);

    await dir.write('001_create.sql', `CREATE TABLE ${schema}.items (id bigint);`);
    await dir.write('002_more.sql', `CREATE TABLE ${schema}.more (id integer);`);
    const failure = migrate(database.pool, { schema, directory: dir.url });
    await expect(failure).rejects.toBeInstanceOf(MigrationChangedError);
    await expect(failure).rejects.toThrow(
      `migration ${schema}/001_create.sql was edited after it was applied`,
    );
    // Nothing after it ran either.
    expect(await appliedNames(schema)).toEqual(['001_create.sql']);
    expect(await relationExists(`${schema}.more`)).toBe(false);
  });

  it('fills the checksums of an install from before them, then holds the files to them', async () => {
    const schema = nextSchema();
    const sql = `CREATE TABLE ${schema}.items (id integer);`;
    const dir = await createMigrationDir({ '001_create.sql': sql });
    // The bookkeeping table as releases without checksums made it.
    await database.pool.query(`CREATE SCHEMA ${schema}`);
    await database.pool.query(
      `CREATE TABLE ${schema}.schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await database.pool.query(sql);
    await database.pool.query(
      `INSERT INTO ${schema}.schema_migrations (name) VALUES ('001_create.sql')`,
    );

    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual([]);
    const { rows } = await database.pool.query(
      `SELECT name, checksum FROM ${schema}.schema_migrations`,
    );
    expect(rows).toEqual([{ name: '001_create.sql', checksum: migrationChecksum(sql) }]);

    await dir.write('001_create.sql', `${sql}\n-- edited`);
    await expect(migrate(database.pool, { schema, directory: dir.url })).rejects.toThrow(
      MigrationChangedError,
    );
  });

  it('applies only the files asked for, and the rest on the next full run', async () => {
    const schema = nextSchema();
    const dir = await createMigrationDir({
      '001_create.sql': `CREATE TABLE ${schema}.items (id integer);`,
      '002_note.sql': `ALTER TABLE ${schema}.items ADD COLUMN note text;`,
    });

    expect(
      await migrate(database.pool, {
        schema,
        directory: dir.url,
        only: new Set(['001_create.sql']),
      }),
    ).toEqual(['001_create.sql']);
    expect(await migrate(database.pool, { schema, directory: dir.url })).toEqual(['002_note.sql']);
  });
});
