import { startEmbeddedPostgres } from '@jarvis/db';
import { makeTempDir } from '@jarvis/testkit';
import { cpuReport, PostgresCommand, reportReady, serveCommands } from './ipc';

// The embedded Postgres for overhead.ts when no DATABASE_URL is given, in a process of its
// own as `make dev` runs it: the gateway's usage rollup writes to it, and its CPU is reported
// apart from the gateway's.

const dir = await makeTempDir('gateway-bench-pg');
const postgres = await startEmbeddedPostgres({ dataDir: dir.path, port: 0 });

serveCommands(
  PostgresCommand,
  () => cpuReport(),
  async () => {
    await postgres.stop();
    await dir.remove();
  },
);
reportReady({ type: 'ready', databaseUrl: postgres.url });
