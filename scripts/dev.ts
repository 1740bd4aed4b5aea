import { resolve } from 'node:path';
import { SERVICE_NAMES, Stack } from '@jarvis/testkit';

// `make dev`: the six services as local processes from their sources, against the local NATS and
// Redis, and the embedded Postgres (kept in .data/postgres) unless DATABASE_URL is set.
const COLORS = [31, 32, 33, 34, 35, 36, 37];
const names = [...SERVICE_NAMES, 'postgres'];
const width = Math.max(...names.map((name) => name.length));

const env: Record<string, string> = {};
for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;

// The key that seals notification channels' secrets, made by the tools service's first start
// beside the database (JARVIS_SECRET_KEY, when set, wins).
env.JARVIS_SECRET_KEY_FILE ??= resolve('.data/secret.key');

const stack = new Stack({
  env,
  dataDir: resolve('.data/postgres'),
  // From source always: a restarted service runs the code as last edited, built or not.
  runFrom: 'source',
  ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
  ports: {
    postgres: 54320,
    gateway: Number(process.env.GATEWAY_PORT ?? 8080),
    orchestrator: 8081,
    memory: 8082,
    'model-gateway': 8083,
    tools: 8084,
    scheduler: 8085,
  },
  onLine: (name, line) => {
    const color = COLORS[names.indexOf(name) % COLORS.length];
    process.stdout.write(`\x1b[${color}m${name.padEnd(width)}\x1b[0m │ ${line}\n`);
  },
});

let isStopping = false;
async function stop(): Promise<void> {
  if (isStopping) return;
  isStopping = true;
  await stack.stop();
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

await stack.start();
process.stdout.write(`\nJarvis is up: ${stack.gatewayUrl} (Ctrl-C stops everything)\n`);
