import { type Bus, ensureWorkQueue } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { TURNS_STREAM, turnRequested } from '@jarvis/contracts';
import {
  connectTestRedis,
  NATS_URL,
  REDIS_URL,
  type ServiceName,
  Stack,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { startDatabaseFixture } from './database-fixture';

export type ServicesFixture = {
  // The orchestrator's own schema is migrated; each service started migrates its own.
  db: TestDatabase;
  namespace: string;
  // Two connections in the namespace: the orchestrator's code under test serves on `bus`, and
  // `client` asks it, as the gateway or the scheduler would.
  bus: Bus;
  client: Bus;
  redis: Redis;
  stop(): Promise<void>;
};

// The orchestrator's code under test runs in the test process, and the services it talks to
// (memory, the scheduler) run as their own processes on the test's database, NATS namespace and
// Redis, as in production.
export async function startServicesFixture(
  services: readonly ServiceName[],
  // More settings for those services (the model gateway's provider, say).
  env: Record<string, string> = {},
): Promise<ServicesFixture> {
  const stoppers: (() => unknown)[] = [];
  // What was started is stopped in reverse, also when a later step fails: a service process
  // would otherwise outlive the test run.
  const stop = async () => {
    for (const stopOne of stoppers.splice(0).reverse()) await stopOne();
  };
  try {
    const db = await startDatabaseFixture();
    stoppers.push(() => db.stop());
    const namespace = uniqueNamespace('orchestrator');
    const stack = new Stack({
      services,
      databaseUrl: db.url,
      env: { NATS_URL, REDIS_URL, NATS_NAMESPACE: namespace, LOG_LEVEL: 'warn', ...env },
    });
    await stack.start();
    stoppers.push(() => stack.stop());
    const bus = await connectTestBus(namespace);
    stoppers.push(() => bus.close());
    const client = await connectTestBus(namespace);
    stoppers.push(() => client.close());
    const redis = connectTestRedis();
    stoppers.push(() => redis.disconnect());
    await redis.ping();
    return { db, namespace, bus, client, redis, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

// The turn queue submitTurn publishes to, as main.ts makes it, delivering one turn at a time.
export async function ensureTurnQueue(bus: Bus): Promise<void> {
  await ensureWorkQueue(bus, turnRequested, {
    stream: TURNS_STREAM,
    consumer: 'orchestrator',
    ackWaitMs: 30_000,
    maxDeliver: -1,
    maxInFlight: 1,
  });
}
