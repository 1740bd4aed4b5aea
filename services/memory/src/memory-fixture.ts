import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { migrate, type Pool } from '@jarvis/db';
import { createLogger, type Metrics } from '@jarvis/telemetry';
import {
  startTestDatabase,
  type TestDatabase,
  type TestDatabaseOptions,
  uniqueNamespace,
} from '@jarvis/testkit';
import { registerHandlers } from './handlers';
import {
  type IndexerSettings,
  type MessageIndexer,
  startMessageIndexer,
} from './services/index-messages';
import { createMemoryMetrics, type MemoryMetrics } from './services/memory-metrics';
import { configureVectorSearch } from './vector-search-settings';

type Register = (bus: Bus, pool: Pool) => { unsubscribe(): void }[];

export type MemoryFixture = {
  db: TestDatabase;
  // Requests go out on this one; the handlers answer on their own connection, as across services.
  clientBus: Bus;
  indexer: MessageIndexer;
  // On the registry the fixture was given, if any: what its handlers count and time.
  metrics: MemoryMetrics | undefined;
  // The count(*) (or any single `count` column) a query answers.
  countRows(sql: string, params: unknown[]): Promise<number>;
  stop(): Promise<void>;
};

// The memory service as its tests meet it: a test database with the memory schema, set up as
// main.ts sets it up, the message indexer, and the handlers of messages, recall and search plus
// those of `register`, on a namespace of the machine's NATS of their own.
export async function startMemoryFixture(
  label: string,
  register: Register[] = [],
  indexerSettings?: IndexerSettings,
  databaseOptions: TestDatabaseOptions = {},
  registry?: Metrics,
): Promise<MemoryFixture> {
  const db = await startTestDatabase(databaseOptions);
  const logger = createLogger('test', 'silent');
  // Before the first connection, so every pooled connection gets the settings.
  configureVectorSearch(db.pool, logger);
  await migrate(db.pool, {
    schema: 'memory',
    directory: new URL('../migrations', import.meta.url),
  });
  const namespace = uniqueNamespace(label);
  const serverBus = await connectTestBus(namespace);
  const clientBus = await connectTestBus(namespace);
  const indexer = startMessageIndexer(db.pool, logger, indexerSettings);
  const metrics = registry && createMemoryMetrics(registry, db.pool, logger);
  const subscriptions = [
    ...register.flatMap((registerMore) => registerMore(serverBus, db.pool)),
    ...registerHandlers(serverBus, db.pool, indexer, undefined, undefined, metrics),
  ];
  // A request published before the server's SUB reached NATS would find no responders.
  await serverBus.nc.flush();
  return {
    db,
    clientBus,
    indexer,
    metrics,
    async countRows(sql, params) {
      const { rows } = await db.pool.query<{ count: string }>(sql, params);
      return Number(rows[0]?.count ?? 0);
    },
    async stop() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      await clientBus.close();
      await serverBus.close();
      await indexer.stop();
      await db.stop();
    },
  };
}
