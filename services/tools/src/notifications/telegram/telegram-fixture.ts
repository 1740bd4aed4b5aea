import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { migrate } from '@jarvis/db';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { createRateAdmitter, type UserRateLimits } from '@jarvis/service-kit';
import { createLogger } from '@jarvis/telemetry';
import {
  connectTestRedis,
  NATS_URL,
  REDIS_URL,
  type ServiceName,
  Stack,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { createTelegramBot, type TelegramBot } from './bot';
import { type BotApiStandIn, startBotApiStandIn } from './bot-api-stand-in';
import { registerTelegramHandlers } from './link-handlers';
import { startTelegram } from './start-telegram';

export const TEST_TOKEN = '424242:telegram-fixture-token';

export type TelegramReplica = {
  telegram: TelegramBot;
  isPolling(): boolean;
  stop(): Promise<void>;
};

export type TelegramFixture = {
  db: TestDatabase;
  namespace: string;
  api: BotApiStandIn;
  // Asks the tools service's RPCs, as the gateway does.
  client: Bus;
  redis: Redis;
  // Log lines of every replica, to check that no secret is in them.
  lines: string[];
  // One tools replica's Telegram part: its own bus, bot and election, on the test's database.
  startReplica(options?: { limits?: UserRateLimits }): Promise<TelegramReplica>;
  stop(): Promise<void>;
};

// The Telegram part of the tools service as its tests meet it: the tools schema on a database of
// the test's own, the machine's NATS and Redis in a namespace of its own, a Bot API stand-in,
// and, when asked, the services a turn goes through, each its own process.
export async function startTelegramFixture(
  options: { services?: readonly ServiceName[]; env?: Record<string, string> } = {},
): Promise<TelegramFixture> {
  const stoppers: (() => unknown)[] = [];
  const stop = async () => {
    for (const stopOne of stoppers.splice(0).reverse()) await stopOne();
  };
  try {
    const db = await startTestDatabase();
    stoppers.push(() => db.stop());
    await migrate(db.pool, {
      schema: 'tools',
      directory: new URL('../../../migrations', import.meta.url),
    });
    const namespace = uniqueNamespace('telegram');
    if (options.services?.length) {
      const stack = new Stack({
        services: options.services,
        databaseUrl: db.url,
        env: { NATS_URL, REDIS_URL, NATS_NAMESPACE: namespace, LOG_LEVEL: 'warn', ...options.env },
      });
      await stack.start();
      stoppers.push(() => stack.stop());
    }
    const api = await startBotApiStandIn(TEST_TOKEN);
    stoppers.push(() => api.close());
    const client = await connectTestBus(namespace);
    stoppers.push(() => client.close());
    const redis = connectTestRedis();
    stoppers.push(() => redis.disconnect());
    await redis.ping();
    const lines: string[] = [];
    const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));

    return {
      db,
      namespace,
      api,
      client,
      redis,
      lines,
      async startReplica(replicaOptions = {}) {
        const logger = createLogger('tools', 'debug', { write: (line) => lines.push(line) });
        const bus = await connectTestBus(namespace);
        const telegram = createTelegramBot({ token: TEST_TOKEN, apiRoot: api.url, guard, logger });
        const handlers = registerTelegramHandlers({ bus, pool: db.pool, telegram });
        await telegram.ready();
        const started = await startTelegram({
          telegram,
          bus,
          pool: db.pool,
          redis,
          logger,
          databaseUrl: db.url,
          namespace,
          admitRate: createRateAdmitter(redis, logger),
          limits: replicaOptions.limits ?? { perMinute: 600, chatPerMinute: 60 },
          submitTimeoutMs: 5_000,
          turnTimeoutMs: 30_000,
          electionRetryMs: 200,
          pollTimeoutS: 1,
        });
        await bus.nc.flush();
        let isStopped = false;
        const stopReplica = async () => {
          if (isStopped) return;
          isStopped = true;
          await started.stop();
          for (const handler of handlers) handler.unsubscribe();
          await bus.close();
        };
        stoppers.push(stopReplica);
        return { telegram, isPolling: () => started.isPolling(), stop: stopReplica };
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
