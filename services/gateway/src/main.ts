import { Bus } from '@jarvis/bus';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService, databasePoolSettings } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { Redis } from 'ioredis';
import { loadEnv } from './env';
import { securityHeaders } from './middleware/security-headers';
import { createApiRouter } from './routes/api-router';
import { createWebUiRouter } from './routes/web-ui';
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
  const pool = createPool({ ...databasePoolSettings(env), applicationName: SERVICE });
  await migrate(pool, { schema: 'gateway', directory: new URL('../migrations', import.meta.url) });
  const { generatedKey } = await ensureAdminKey(pool, env.JARVIS_ADMIN_KEY);
  if (generatedKey) {
    // Printed once, on the first start, and never logged again: only its hash is stored.
    process.stdout.write(
      `\n  Jarvis admin API key (shown once, keep it safe):\n\n    ${generatedKey}\n\n`,
    );
  }
  const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: true });
  redis.on('error', () => {}); // reported by the readiness check, the watchdog and the limiter
  await redis.connect();
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
    checks: {
      nats: () => bus.isConnected(),
      postgres: () => isDatabaseReachable(pool),
      redis: () => redis.status === 'ready',
    },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    onStop: async () => {
      await bus.close();
      await pool.end();
      redis.disconnect();
      await telemetry.stop();
    },
  });
  // req.ip, which limits requests without a valid key per address, is the socket's address
  // unless the peer is a trusted proxy: a client could otherwise pick its own by sending
  // X-Forwarded-For.
  service.app.set('trust proxy', env.TRUST_PROXY);
  // Security headers on everything after /healthz, /readyz and /metrics: the API, the web UI and
  // every error.
  service.app.use(securityHeaders());
  service.app.use(
    '/v1',
    createApiRouter({
      bus,
      pool,
      bodyLimitBytes: env.BODY_LIMIT_BYTES,
      importBodyLimitBytes: env.IMPORT_BODY_LIMIT_BYTES,
      submitTimeoutMs: env.SERVICE_TIMEOUT_MS,
      turnTimeoutMs: env.TURN_TIMEOUT_MS,
      rateLimit: {
        redis,
        namespace: env.NATS_NAMESPACE,
        logger,
        perMinute: env.RATE_LIMIT_PER_MINUTE,
        chatPerMinute: env.CHAT_RATE_LIMIT_PER_MINUTE,
        unauthenticatedPerMinute: env.RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE,
      },
      corsOrigins: env.CORS_ORIGINS,
      eventStreamsPerUser: env.EVENTS_MAX_STREAMS_PER_USER,
      stopping: service.stopping,
    }),
  );
  // The web UI's build, web/dist (beside dist/ in the image, as in the repo). Last: it answers
  // only what no route above did.
  service.app.use(createWebUiRouter({ directory: new URL('../web/dist', import.meta.url) }));
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}
