import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { securityHeaders } from './middleware/security-headers';
import { createApiRouter } from './routes/api-router';
import { createWebUiRouter } from './routes/web-ui';
import { ensureAdminKey } from './services/api-keys';

const env = loadEnv();

await bootService(
  {
    name: 'gateway',
    env,
    port: env.GATEWAY_PORT,
    database: { env, schema: 'gateway', migrations: new URL('../migrations', import.meta.url) },
    redis: { url: env.REDIS_URL },
  },
  async ({ bus, pool, redis, logger, service }) => {
    const { generatedKey } = await ensureAdminKey(pool, env.JARVIS_ADMIN_KEY);
    if (generatedKey) {
      // Printed once, on the first start, and never logged again: only its hash is stored.
      process.stdout.write(
        `\n  Jarvis admin API key (shown once, keep it safe):\n\n    ${generatedKey}\n\n`,
      );
    }
    // req.ip, which limits requests without a valid key per address, is the socket's address
    // unless the peer is a trusted proxy: a client could otherwise pick its own by sending
    // X-Forwarded-For.
    service.app.set('trust proxy', env.TRUST_PROXY);
    // Security headers on everything after /healthz, /readyz and /metrics: the API, the web UI
    // and every error.
    service.app.use(securityHeaders());
    service.app.use(
      '/v1',
      createApiRouter({
        bus,
        pool,
        bodyLimitBytes: env.BODY_LIMIT_BYTES,
        importBodyLimitBytes: env.IMPORT_BODY_LIMIT_BYTES,
        documentUploadMaxBytes: env.DOCUMENT_UPLOAD_MAX_BYTES,
        workspaceFileMaxBytes: env.WORKSPACE_FILE_MAX_MB * 1_024 * 1_024,
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
        grafanaUrl: env.GRAFANA_URL,
      }),
    );
    // The web UI's build, web/dist (beside dist/ in the image, as in the repo). Last: it answers
    // only what no route above did.
    service.app.use(createWebUiRouter({ directory: new URL('../web/dist', import.meta.url) }));
  },
);
