import { type Bus, ensureUserEventStream } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  type HistoryMessage,
  memoryConversationsList,
  memoryMessagesList,
} from '@jarvis/contracts';
import { createPool, migrate } from '@jarvis/db';
import { createLogger } from '@jarvis/telemetry';
import {
  NATS_URL,
  REDIS_URL,
  type ServiceName,
  Stack,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import { registerHandlers } from './handlers';
import { type Engine, type EngineSettings, startEngine } from './services/engine';
import type { ScheduleLimits } from './services/schedule-service';
import type { SchedulerMetrics } from './services/scheduler-metrics';

// The defaults of env.ts.
const DEFAULT_LIMITS: ScheduleLimits = {
  maxSchedulesPerUser: 500,
  agentRunsPerDay: 50,
  agentMinIntervalMinutes: 15,
  reminderGraceMinutes: 12 * 60,
  agentGraceMinutes: 60,
  missedMaxRuns: 10,
};

const TEST_ENGINE_SETTINGS: EngineSettings = {
  leaseMs: 30_000,
  concurrency: 32,
  maxSleepMs: 60_000,
  missedAfterMs: 60_000,
  catchUpSpreadMs: 0,
  agentRunsPerDay: DEFAULT_LIMITS.agentRunsPerDay,
};

export type SchedulerFixture = {
  db: TestDatabase;
  namespace: string;
  // Requests go out on this one; the handlers answer on their own connection, as across services.
  clientBus: Bus;
  // An engine with a bus and pool of its own, as a scheduler replica has; stopped by stop().
  // With `metrics`, it counts its occurrences there.
  startEngine(settings?: Partial<EngineSettings>, metrics?: SchedulerMetrics): Promise<Engine>;
  // The count(*) (or any single `count` column) a query answers.
  countRows(sql: string, params?: unknown[]): Promise<number>;
  // Every message of a user's conversation (default: the persistent one), as memory tells it.
  conversationMessages(userId: string, conversationId?: string): Promise<HistoryMessage[]>;
  stop(): Promise<void>;
};

type FixtureOptions = {
  // The services the scheduler delivers to, each its own process on the test's database and
  // NATS namespace, as in production.
  services?: readonly ServiceName[];
  // More settings for those services (model-gateway's provider, say).
  env?: Record<string, string>;
  limits?: Partial<ScheduleLimits>;
};

type Stopper = () => unknown;

// The scheduler as its tests meet it: a test database with the scheduler schema, its handlers on
// a NATS namespace of their own, and engines on demand.
export async function startSchedulerFixture(
  label: string,
  options: FixtureOptions = {},
): Promise<SchedulerFixture> {
  // What was started is stopped in reverse, also when a later step fails: service processes
  // would otherwise outlive the test run.
  const stoppers: Stopper[] = [];
  const stop = async () => {
    for (const stopOne of stoppers.splice(0).reverse()) await stopOne();
  };
  try {
    const db = await startTestDatabase();
    stoppers.push(() => db.stop());
    await migrate(db.pool, {
      schema: 'scheduler',
      directory: new URL('../migrations', import.meta.url),
    });
    const namespace = uniqueNamespace(label);
    const services = new Stack({
      services: options.services ?? [],
      databaseUrl: db.url,
      env: { NATS_URL, REDIS_URL, NATS_NAMESPACE: namespace, LOG_LEVEL: 'warn', ...options.env },
    });
    await services.start();
    stoppers.push(() => services.stop());
    const serverBus = await connectTestBus(namespace);
    stoppers.push(() => serverBus.close());
    await ensureUserEventStream(serverBus);
    const clientBus = await connectTestBus(namespace);
    stoppers.push(() => clientBus.close());
    const subscriptions = registerHandlers({
      bus: serverBus,
      pool: db.pool,
      limits: { ...DEFAULT_LIMITS, ...options.limits },
    });
    stoppers.push(() => {
      for (const subscription of subscriptions) subscription.unsubscribe();
    });
    // A request published before the server's SUB reached NATS would find no responders.
    await serverBus.nc.flush();
    return {
      db,
      namespace,
      clientBus,
      async startEngine(settings = {}, metrics) {
        const bus = await connectTestBus(namespace);
        const pool = createPool({ url: db.url, applicationName: 'scheduler-test', max: 4 });
        const engine = startEngine(
          { bus, pool, logger: createLogger('scheduler-test', 'silent'), metrics },
          { ...TEST_ENGINE_SETTINGS, ...settings },
        );
        await bus.nc.flush();
        let isStopped = false;
        const stopEngine = async () => {
          if (isStopped) return;
          isStopped = true;
          await engine.stop();
          await bus.close();
          await pool.end();
        };
        stoppers.push(stopEngine);
        return { stop: stopEngine };
      },
      conversationMessages: (userId, conversationId) =>
        readConversation(clientBus, userId, conversationId),
      async countRows(sql, params = []) {
        const { rows } = await db.pool.query<{ count: string }>(sql, params);
        return Number(rows[0]?.count ?? 0);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

// Every message of a user's conversation (default: the persistent one), as memory tells it.
export async function readConversation(
  bus: Bus,
  userId: string,
  conversationId?: string,
): Promise<HistoryMessage[]> {
  const id =
    conversationId ??
    (await bus.request(memoryConversationsList, { userId })).defaultConversationId;
  if (!id) return [];
  const messages: HistoryMessage[] = [];
  let before: number | undefined;
  do {
    const page = await bus.request(memoryMessagesList, {
      userId,
      conversationId: id,
      limit: 200,
      before,
    });
    messages.push(...page.messages);
    before = page.nextBefore;
  } while (before !== undefined);
  return messages;
}
