import { z } from 'zod';
import { EMBEDDED_POSTGRES_PORT, startEmbeddedPostgres } from './embedded';

// Runs the embedded Postgres as its own process, for `make dev` and the end-to-end tests.
const Env = z.object({
  // Where the database files live; kept across restarts.
  EMBEDDED_PG_DIR: z.string().default('.data/postgres'),
  // Interface to listen on.
  EMBEDDED_PG_HOST: z.string().default('127.0.0.1'),
  // Port to listen on.
  EMBEDDED_PG_PORT: z.coerce.number().int().min(0).max(65_535).default(EMBEDDED_POSTGRES_PORT),
});

const env = Env.parse(process.env);
const postgres = await startEmbeddedPostgres({
  dataDir: env.EMBEDDED_PG_DIR,
  host: env.EMBEDDED_PG_HOST,
  port: env.EMBEDDED_PG_PORT,
});
process.stdout.write(`${JSON.stringify({ msg: 'embedded postgres ready', url: postgres.url })}\n`);

let isStopping = false;
async function stop(): Promise<void> {
  if (isStopping) return;
  isStopping = true;
  await postgres.stop();
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
