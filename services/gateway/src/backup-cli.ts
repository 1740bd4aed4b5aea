import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  BackupFileError,
  type BackupManifest,
  BackupRefusedError,
  createPool,
  EMBEDDED_POSTGRES_PORT,
  embeddedPostgresUrl,
  isDatabaseReachable,
  type KeyFile,
  MigrationChangedError,
  type Pool,
  restoreBackup,
  startEmbeddedPostgres,
  writeBackup,
} from '@jarvis/db';
import { loadBackupEnv } from './env';

// `make backup` and `make restore FILE=…`. In the gateway image (compose), as
//   node dist/backup-cli.js backup > file
//   node dist/backup-cli.js restore - --migrations <folder holding each service's migrations/>
// and from the sources for `make dev`, against DATABASE_URL or the embedded Postgres. It lives
// in the gateway because that image already runs `make key` the same way.

const USAGE = `usage:
  backup-cli backup [--out FILE] [--key-file FILE|-]  (stdout without --out)
  backup-cli restore FILE|- [--force] [--migrations DIR] [--key-file FILE|-]
`;

// Each service's schema and its folder under services/. Every schema holding state is here, so
// every backup holds it.
const SERVICE_SCHEMAS = {
  gateway: 'gateway',
  orchestrator: 'orchestrator',
  memory: 'memory',
  model_gateway: 'model-gateway',
  scheduler: 'scheduler',
  tools: 'tools',
} as const;

// The tools service's key that seals notification channels' secrets: kept with the data, since
// the secrets in the tools schema open with it only. Its name inside a backup.
const SECRET_KEY_FILE = 'secret.key';

type Database = { pool: Pool; isRunningServer: boolean; stop(): Promise<void> };

const env = loadBackupEnv();
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string' },
    force: { type: 'boolean', default: false },
    // From src/ (make dev), services/ is two folders up; the image passes it explicitly.
    migrations: { type: 'string', default: new URL('../../', import.meta.url).pathname },
    // Where the secret key is read from (backup) or put back (restore); `-`: standard input or
    // output, which is how compose hands it over from and to the tools service's volume.
    'key-file': { type: 'string', default: env.JARVIS_SECRET_KEY_FILE },
  },
});
const [command, file] = positionals;

try {
  if (command === 'backup') await backup(values.out, values['key-file']);
  else if (command === 'restore' && file) {
    await restore(file, values.force, values.migrations, values['key-file']);
  } else {
    process.stderr.write(USAGE);
    process.exitCode = 64;
  }
} catch (error) {
  if (
    !(
      error instanceof BackupFileError ||
      error instanceof BackupRefusedError ||
      error instanceof MigrationChangedError
    )
  ) {
    throw error;
  }
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 1;
}

// DATABASE_URL; else `make dev`'s embedded server if it runs; else its folder, opened here.
async function openDatabase(): Promise<Database> {
  if (env.DATABASE_URL) return poolDatabase(env.DATABASE_URL, true);
  const running = await poolDatabase(
    embeddedPostgresUrl('127.0.0.1', EMBEDDED_POSTGRES_PORT),
    true,
  );
  if (await isDatabaseReachable(running.pool)) return running;
  await running.stop();
  const embedded = await startEmbeddedPostgres({ dataDir: env.EMBEDDED_PG_DIR, port: 0 });
  const database = await poolDatabase(embedded.url, false);
  return {
    ...database,
    async stop() {
      await database.stop();
      await embedded.stop();
    },
  };
}

async function poolDatabase(url: string, isRunningServer: boolean): Promise<Database> {
  // No statement timeout: a large table takes as long as it takes.
  const pool = createPool({ url, applicationName: 'backup', max: 1, warm: 0 });
  return { pool, isRunningServer, stop: () => pool.end() };
}

async function backup(out: string | undefined, keyFile: string): Promise<void> {
  const key = await readKeyFile(keyFile);
  const database = await openDatabase();
  try {
    // Written beside its final name and renamed when complete, so a failed run leaves no file
    // that looks like a backup.
    const partial = out ? `${out}.partial` : undefined;
    const stream = partial ? createWriteStream(partial, { mode: 0o600 }) : process.stdout;
    const { checksum, manifest } = await writeBackup(database.pool, stream, {
      schemas: Object.keys(SERVICE_SCHEMAS),
      passphrase: env.JARVIS_BACKUP_PASSPHRASE,
      keyFiles: key ? [key] : [],
    }).catch(async (error: unknown) => {
      if (partial) await rm(partial, { force: true });
      throw error;
    });
    if (partial && out) {
      stream.end();
      await once(stream, 'close');
      await rename(partial, out);
    }
    report('backed up', manifest);
    process.stderr.write(
      `sha256 ${checksum}, ${env.JARVIS_BACKUP_PASSPHRASE ? 'encrypted' : 'NOT encrypted'}\n`,
    );
  } finally {
    await database.stop();
  }
}

async function restore(
  file: string,
  force: boolean,
  migrationsRoot: string,
  keyFile: string,
): Promise<void> {
  // A file is read twice (checked whole first, then restored): standard input is kept first.
  const path = file === '-' ? await spoolStandardInput() : file;
  const database = await openDatabase();
  try {
    if (database.isRunningServer && !env.DATABASE_URL) {
      throw new BackupRefusedError('make dev is running: stop it, then restore');
    }
    const root = pathToFileURL(
      migrationsRoot.endsWith('/') ? migrationsRoot : `${migrationsRoot}/`,
    );
    const migrations = Object.fromEntries(
      Object.entries(SERVICE_SCHEMAS).map(([schema, service]) => [
        schema,
        new URL(`${service}/migrations/`, root),
      ]),
    );
    const { manifest, upgraded, keyFiles } = await restoreBackup(database.pool, path, {
      migrations,
      passphrase: env.JARVIS_BACKUP_PASSPHRASE,
      force,
    });
    report('restored', manifest);
    const key = keyFiles.find((candidate) => candidate.name === SECRET_KEY_FILE);
    if (key) await writeKeyFile(keyFile, key.content);
    for (const [schema, names] of Object.entries(upgraded)) {
      if (names.length > 0) process.stderr.write(`${schema}: upgraded with ${names.join(', ')}\n`);
    }
  } finally {
    await database.stop();
    if (path !== file) await rm(path, { force: true });
  }
}

// The key file, or none: an install whose key is JARVIS_SECRET_KEY (kept in .env, not here), or
// whose tools service never started, has no file.
async function readKeyFile(path: string): Promise<KeyFile | undefined> {
  const content =
    path === '-'
      ? await buffer(process.stdin)
      : await readFile(path).catch((error: unknown) => {
          if (error instanceof Error && 'code' in error && error.code === 'ENOENT')
            return undefined;
          throw error;
        });
  if (!content || content.length === 0) {
    process.stderr.write(
      `no secret key file${path === '-' ? '' : ` at ${path}`}: none backed up\n`,
    );
    return undefined;
  }
  return { name: SECRET_KEY_FILE, content };
}

// Put back in place of whatever key was there: the restored secrets open with this one only.
// Written whole beside it, then renamed, readable by its owner only.
async function writeKeyFile(path: string, content: Buffer): Promise<void> {
  if (path === '-') {
    process.stdout.write(content);
    return;
  }
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const partial = `${path}.restoring`;
  await writeFile(partial, content, { mode: 0o600 });
  await rename(partial, path);
  process.stderr.write(`secret key file restored to ${path}\n`);
}

async function spoolStandardInput(): Promise<string> {
  const path = join(tmpdir(), `jarvis-restore-${process.pid}.backup`);
  await pipeline(process.stdin, createWriteStream(path, { mode: 0o600 }));
  return path;
}

function report(what: string, manifest: BackupManifest): void {
  let total = 0;
  for (const schema of manifest.schemas) {
    for (const table of schema.tables) {
      total += table.rows;
      process.stderr.write(`${schema.name}.${table.name}: ${table.rows} rows\n`);
    }
  }
  process.stderr.write(`${what} ${total} rows in ${manifest.schemas.length} schemas\n`);
}
