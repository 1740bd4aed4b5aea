import { Bus } from '@jarvis/bus';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService, databasePoolSettings } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { createRedis } from './redis-client';
import { registerRouteHandlers } from './route-handlers';
import { createRouting } from './routing/create-routing';
import { createGenAiMetrics } from './telemetry/gen-ai';
import { usageLimitsFrom } from './usage/usage-env';
import { registerUsageHandlers } from './usage/usage-handlers';
import { createUsageMeter } from './usage/usage-meter';
import { startUsageRollup } from './usage/usage-rollup';

const SERVICE = 'model-gateway';

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
    schema: 'model_gateway',
    directory: new URL('../migrations', import.meta.url),
  });
  const redis = createRedis(env.REDIS_URL);
  redis.on('error', () => {}); // reported by the readiness check and the watchdog
  await redis.connect();
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });
  const limits = usageLimitsFrom(env);
  // The rollup creates the usage stream, which the meter publishes to.
  const rollup = await startUsageRollup({ bus, pool, logger });
  const meter = createUsageMeter({ redis, bus, limits, logger });
  const routing = createRouting(env, {
    bus,
    redis,
    meter,
    metrics: createGenAiMetrics(metrics),
    logger,
  });
  for (const purpose of ['chat', 'utility', 'embed'] as const) {
    const route = purpose === 'embed' ? routing.embed.route : routing.chat.routes[purpose];
    logger.info({ purpose, models: route.map((target) => target.ref) }, 'model route');
  }
  if (routing.config.unpriced.length > 0) {
    logger.warn(
      { models: routing.config.unpriced },
      'no price in the model config: counted as free',
    );
  }
  registerHandlers(bus, routing);
  registerRouteHandlers(bus, routing);
  registerUsageHandlers(bus, { pool, redis, limits });

  const service = createService({
    name: SERVICE,
    port: env.HTTP_PORT,
    logger,
    metrics,
    checks: {
      nats: () => bus.isConnected(),
      postgres: () => isDatabaseReachable(pool),
      redis: () => redis.status === 'ready',
    },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    onStop: async () => {
      await rollup.stop();
      await meter.stop();
      await bus.close();
      await pool.end();
      redis.disconnect();
      await telemetry.stop();
    },
  });
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}
