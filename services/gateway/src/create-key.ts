import { createPool, migrate } from '@jarvis/db';
import { loadEnv } from './env';
import { createUser } from './services/api-keys';

// `make key NAME=alice`: creates a user and prints its API key (shown only this once).
const env = loadEnv();
const name = process.argv[2]?.trim();
if (!name) {
  process.stderr.write('usage: make key NAME=<user name>\n');
  process.exit(64);
}
const pool = createPool({ url: env.DATABASE_URL, applicationName: 'gateway-create-key', max: 1 });
try {
  await migrate(pool, { schema: 'gateway', directory: new URL('../migrations', import.meta.url) });
  const { user, apiKey } = await createUser(pool, name);
  process.stdout.write(`user ${user.name} (${user.id})\napi key: ${apiKey}\n`);
} finally {
  await pool.end();
}
