import { ensureWorkQueue, type WorkQueueOptions } from '@jarvis/bus';
import {
  COMPACTION_STREAM,
  compactionRequested,
  EXTRACTION_STREAM,
  extractionRequested,
} from '@jarvis/contracts';
import { bootService } from '@jarvis/service-kit';
import { registerDocumentHandlers } from './documents-handlers';
import { loadEnv } from './env';
import { registerEpisodeHandlers } from './episodes-handlers';
import { registerExportHandlers } from './export-handlers';
import { registerExtractionHandlers } from './extractions-handlers';
import { registerFactHandlers } from './facts-handlers';
import { registerFileHandlers } from './files-handlers';
import { registerForgetHandlers } from './forget-handlers';
import { registerHandlers, startCompactionWorker, startExtractionWorker } from './handlers';
import { registerInstructionsHandlers } from './instructions-handlers';
import { startDenseIndexer } from './services/dense-index';
import { DEFAULT_INDEXER, startMessageIndexer } from './services/index-messages';
import { createMemoryMetrics } from './services/memory-metrics';
import { loadItems } from './services/search-service';
import { startSparseReembed } from './services/sparse-reembed';
import { configureVectorSearch } from './vector-search-settings';

const env = loadEnv();

await bootService(
  {
    name: 'memory',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'memory',
      migrations: new URL('../migrations', import.meta.url),
      poolSize: env.DATABASE_POOL_SIZE,
      configure: configureVectorSearch,
    },
  },
  async ({ bus, pool, logger, metrics }) => {
    const memoryMetrics = createMemoryMetrics(metrics, pool, logger);
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
    const reembed = startSparseReembed(pool, logger);
    registerHandlers(bus, pool, indexer, compaction, dense, memoryMetrics);
    registerFileHandlers(bus, pool);
    registerDocumentHandlers(bus, pool);
    registerFactHandlers(bus, pool);
    registerExtractionHandlers(bus, pool);
    registerInstructionsHandlers(bus, pool);
    registerForgetHandlers(bus, pool);
    registerExportHandlers(bus, pool);
    registerEpisodeHandlers(bus, pool, { modelTimeoutMs: env.UTILITY_MODEL_TIMEOUT_MS });
    const compactionWorker = await startCompactionWorker(
      bus,
      pool,
      compaction,
      compactionQueue,
      memoryMetrics,
    );
    const extractionWorker = await startExtractionWorker(
      bus,
      pool,
      { modelTimeoutMs: env.UTILITY_MODEL_TIMEOUT_MS },
      extractionQueue,
      memoryMetrics,
    );

    // Drain the workers and indexers before the bus and the pool close, so work in hand
    // finishes against live connections.
    return {
      stop: async () => {
        await compactionWorker.stop();
        await extractionWorker.stop();
        await reembed.stop();
        await dense.stop();
        await indexer.stop();
      },
    };
  },
);
