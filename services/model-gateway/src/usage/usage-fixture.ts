import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { MODEL_USAGE_STREAM } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { createLogger, type Logger } from '@jarvis/telemetry';
import {
  connectTestRedis,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import type { UsageEvent } from './usage-meter';
import { ensureUsageStream } from './usage-rollup';

// What the usage tests share: the machine's NATS and Redis under a namespace of their own (the
// usage stream created), optionally a migrated test database; all of it removed on stop.
export type UsageFixture = {
  bus: Bus;
  redis: Redis;
  db: TestDatabase | undefined;
  stop(): Promise<void>;
};

export async function startUsageFixture(options: {
  label: string;
  withDatabase: boolean;
}): Promise<UsageFixture> {
  const bus = await connectTestBus(uniqueNamespace(options.label));
  const redis = connectTestRedis();
  await ensureUsageStream(bus);
  let db: TestDatabase | undefined;
  if (options.withDatabase) {
    db = await startTestDatabase();
    await migrate(db.pool, {
      schema: 'model_gateway',
      directory: new URL('../../migrations', import.meta.url),
    });
  }
  return {
    bus,
    redis,
    db,
    async stop() {
      const jsm = await bus.nc.jetstreamManager();
      await jsm.streams.delete(bus.streamName(MODEL_USAGE_STREAM)).catch(() => false);
      for await (const keys of redis.scanStream({ match: `${bus.namespace}:*`, count: 500 })) {
        if (keys.length > 0) await redis.del(...keys);
      }
      redis.disconnect();
      await bus.close();
      await db?.stop();
    },
  };
}

// One call's usage: a small chat call of a fresh id, answered now.
export function usageEvent(overrides: Partial<UsageEvent> = {}): UsageEvent {
  return {
    id: randomUUID(),
    provider: 'openai',
    model: 'gpt-test',
    purpose: 'chat',
    inputTokens: 100,
    outputTokens: 20,
    costUsd: 0.001,
    at: new Date().toISOString(),
    ...overrides,
  };
}

export type CapturingLogger = { logger: Logger; lines: Record<string, unknown>[] };

// A logger whose lines the test can read, to check what was reported and at which level.
export function createCapturingLogger(): CapturingLogger {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('usage-test', 'info', {
    write(line: string) {
      lines.push(JSON.parse(line));
    },
  });
  return { logger, lines };
}

export const silentLogger = createLogger('usage-test', 'silent');
