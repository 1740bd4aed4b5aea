import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';

export {
  defaultTestDatabaseEngine,
  makeTempDir,
  startTestDatabase,
  type TestDatabase,
  type TestDatabaseEngine,
  type TestDatabaseOptions,
} from '@jarvis/db/testing';

import { Redis } from 'ioredis';

// The real NATS and Redis of this machine (or CI's); tests never mock them.
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

// A fresh subject and stream prefix per test file, so parallel runs never see each other's
// messages on the shared NATS server.
export function uniqueNamespace(label = 'test'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function connectTestRedis(): Redis {
  return new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
}

// Polls until check passes; fails with the last error after timeoutMs.
export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  options: {
    timeoutMs?: number;
    intervalMs?: number;
    what?: string;
    // An error here ends the wait at once: a check's own errors are retried (a server not
    // listening yet), so a process that died would otherwise be waited for until the timeout.
    giveUpIf?: () => Error | undefined;
  } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let lastError: unknown;
  while (Date.now() < deadline) {
    const fatal = options.giveUpIf?.();
    if (fatal) throw fatal;
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
  const reason = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new Error(`timed out waiting for ${options.what ?? 'condition'}${reason}`);
}
