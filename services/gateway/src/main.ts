import { Bus } from '@jarvis/bus';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { loadEnv } from './env';
import { createApiRouter } from './routes/api-router';
import { ensureAdminKey } from './services/api-keys';

const SERVICE = 'gateway';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const pool = createPool({ url: env.DATABASE_URL, applicationName: SERVICE });
  await migrate(pool, { schema: 'gateway', directory: new URL('../migrations', import.meta.url) });
  const { generatedKey } = await ensureAdminKey(pool, env.JARVIS_ADMIN_KEY);
  if (generatedKey) {
    // Printed once, on the first start, and never logged again: only its hash is stored.
    process.stdout.write(
      `\n  Jarvis admin API key (shown once, keep it safe):\n\n    ${generatedKey}\n\n`,
    );
  }
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });

  const service = createService({
    name: SERVICE,
    port: env.GATEWAY_PORT,
    logger,
    metrics,
    checks: { nats: () => bus.isConnected(), postgres: () => isDatabaseReachable(pool) },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    onStop: async () => {
      await bus.close();
      await pool.end();
      await telemetry.stop();
    },
  });
  service.app.use(
    '/v1',
    createApiRouter({
      bus,
      pool,
      bodyLimitBytes: env.BODY_LIMIT_BYTES,
      importBodyLimitBytes: env.IMPORT_BODY_LIMIT_BYTES,
      submitTimeoutMs: env.SERVICE_TIMEOUT_MS,
      turnTimeoutMs: env.TURN_TIMEOUT_MS,
    }),
  );
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}
