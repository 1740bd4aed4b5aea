import { Bus } from '@jarvis/bus';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService, databasePoolSettings } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';

const SERVICE = 'scheduler';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const pool = createPool({ ...databasePoolSettings(env), applicationName: SERVICE });
  await migrate(pool, {
    schema: 'scheduler',
    directory: new URL('../migrations', import.meta.url),
  });
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });
  registerHandlers(bus, pool);

  const service = createService({
    name: SERVICE,
    port: env.HTTP_PORT,
    logger,
    metrics,
    checks: { nats: () => bus.isConnected(), postgres: () => isDatabaseReachable(pool) },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    // Drain the bus first so in-flight requests finish against a live pool.
    onStop: async () => {
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
