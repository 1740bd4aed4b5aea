import { Bus, ensureWorkQueue, type WorkQueueOptions } from '@jarvis/bus';
import {
  COMPACTION_STREAM,
  compactionRequested,
  EXTRACTION_STREAM,
  extractionRequested,
} from '@jarvis/contracts';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService, databasePoolSettings } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { registerDocumentHandlers } from './documents-handlers';
import { loadEnv } from './env';
import { registerExportHandlers } from './export-handlers';
import { registerFactHandlers } from './facts-handlers';
import { registerFileHandlers } from './files-handlers';
import { registerForgetHandlers } from './forget-handlers';
import { registerHandlers, startCompactionWorker, startExtractionWorker } from './handlers';
import { startDenseIndexer } from './services/dense-index';
import { DEFAULT_INDEXER, startMessageIndexer } from './services/index-messages';
import { loadItems } from './services/search-service';
import { configureVectorSearch } from './vector-search-settings';

const SERVICE = 'memory';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const pool = createPool({
    ...databasePoolSettings(env),
    applicationName: SERVICE,
    max: env.DATABASE_POOL_SIZE,
  });
  configureVectorSearch(pool, logger);
  await migrate(pool, { schema: 'memory', directory: new URL('../migrations', import.meta.url) });
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });
  const compaction = {
    triggerTokens: env.SUMMARY_TRIGGER_TOKENS,
    keepTokens: env.SUMMARY_KEEP_TOKENS,
    modelTimeoutMs: env.UTILITY_MODEL_TIMEOUT_MS,
  };
  const compactionQueue: WorkQueueOptions = {
    stream: COMPACTION_STREAM,
    consumer: 'memory-compaction',
    // Longer than one summary takes; live workers extend it while they wait on the model.
    ackWaitMs: 60_000,
    maxDeliver: 8,
    maxInFlight: 2,
  };
  await ensureWorkQueue(bus, compactionRequested, compactionQueue);
  const extractionQueue: WorkQueueOptions = {
    stream: EXTRACTION_STREAM,
    consumer: 'memory-extraction',
    // Longer than one extraction takes; live workers extend it while they wait on the model.
    ackWaitMs: 60_000,
    maxDeliver: 5,
    maxInFlight: 2,
  };
  await ensureWorkQueue(bus, extractionRequested, extractionQueue);
  const indexer = startMessageIndexer(pool, logger, {
    ...DEFAULT_INDEXER,
    holdMs: env.MESSAGE_INDEX_HOLD_MS,
  });
  const dense = startDenseIndexer(bus, pool, loadItems);
  registerHandlers(bus, pool, indexer, compaction, dense);
  registerFileHandlers(bus, pool);
  registerDocumentHandlers(bus, pool);
  registerFactHandlers(bus, pool);
  registerForgetHandlers(bus, pool);
  registerExportHandlers(bus, pool);
  const compactionWorker = await startCompactionWorker(bus, pool, compaction, compactionQueue);
  const extractionWorker = await startExtractionWorker(
    bus,
    pool,
    { modelTimeoutMs: env.UTILITY_MODEL_TIMEOUT_MS },
    extractionQueue,
  );

  const service = createService({
    name: SERVICE,
    port: env.HTTP_PORT,
    logger,
    metrics,
    checks: { nats: () => bus.isConnected(), postgres: () => isDatabaseReachable(pool) },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    // Drain the bus first so in-flight requests finish against a live pool.
    onStop: async () => {
      await compactionWorker.stop();
      await extractionWorker.stop();
      await dense.stop();
      await indexer.stop();
      await bus.close();
      await pool.end();
      await telemetry.stop();
    },
  });
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}
