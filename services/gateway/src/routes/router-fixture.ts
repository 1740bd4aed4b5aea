import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { migrate } from '@jarvis/db';
import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
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
import type { Router } from 'express';
import { expect } from 'vitest';
import { createUser } from '../services/api-keys';
import { createApiRouter } from './api-router';

export type TestUser = { id: string; key: string };
export type Reply = { status: number; body: unknown };

export type RouterFixture = {
  db: TestDatabase;
  // The gateway's bus, e.g. to read the server's payload limit.
  bus: Bus;
  alice: TestUser;
  bob: TestUser;
  // basePath's full URL, for requests `call` cannot make (other methods, headers, raw bodies).
  url: string;
  // The /v1 router itself, for a test of what it mounts.
  router: Router;
  // The service processes the routes ask, e.g. to read what they logged.
  services: Stack;
  // A request to `basePath + route`, with the key (if any) and a JSON body (if any).
  call(
    method: string,
    route: string,
    options?: { key?: string | undefined; body?: unknown },
  ): Promise<Reply>;
  stop(): Promise<void>;
};

type HarnessOptions = {
  // The services the routes talk to, each started as its own process on the test's database,
  // NATS namespace and Redis, as in production; none unless a test names them.
  services?: readonly ServiceName[];
  // Settings for those services beyond the connections (a usage limit, say).
  serviceEnv?: Record<string, string>;
  // Per user, and per address without a valid key, per minute (0: none); the production
  // defaults, and a roomy unauthenticated limit, unless a test sets its own.
  rateLimit?: { perMinute: number; chatPerMinute: number; unauthenticatedPerMinute: number };
  // Express's "trust proxy" (main.ts sets TRUST_PROXY); none unless a test sets it.
  trustProxy?: false | number | string[];
  corsOrigins?: string[];
  eventStreamsPerUser?: number;
  // A NATS server of the test's own (startPrivateNats), to take down; the machine's otherwise.
  natsUrl?: string;
  // GRAFANA_URL; unset unless a test sets it.
  grafanaUrl?: string;
  // DOCUMENT_UPLOAD_MAX_BYTES; the production default unless a test sets its own.
  documentUploadMaxBytes?: number;
  // WORKSPACE_FILE_MAX_MB, in bytes; the production default unless a test sets its own.
  workspaceFileMaxBytes?: number;
};

type Stopper = () => unknown;

// The gateway's real /v1 router in front of the real services it asks (the ones a test names),
// on a test database and the machine's NATS and Redis: what a route test needs, set up once per
// file.
export async function startRouterFixture(
  basePath: string,
  options: HarnessOptions = {},
): Promise<RouterFixture> {
  // What was started is stopped in reverse, also when a later step fails: the service processes
  // would otherwise outlive the test run.
  const stoppers: Stopper[] = [];
  const stop = async () => {
    for (const stopOne of stoppers.splice(0).reverse()) await stopOne();
  };
  try {
    return { ...(await startHarness(basePath, options, stoppers)), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startHarness(
  basePath: string,
  options: HarnessOptions,
  stoppers: Stopper[],
): Promise<Omit<RouterFixture, 'stop'>> {
  const db = await startTestDatabase();
  stoppers.push(() => db.stop());
  await migrate(db.pool, {
    schema: 'gateway',
    directory: new URL('../../migrations', import.meta.url),
  });
  const namespace = uniqueNamespace('gateway-routes');
  // Started before the gateway's routes: a service answers once it is ready, so no request of
  // the test finds no responders.
  const services = new Stack({
    services: options.services ?? [],
    databaseUrl: db.url,
    env: {
      NATS_URL: options.natsUrl ?? NATS_URL,
      REDIS_URL,
      NATS_NAMESPACE: namespace,
      LOG_LEVEL: 'warn',
      ...options.serviceEnv,
    },
  });
  await services.start();
  stoppers.push(() => services.stop());
  const gatewayBus = await connectTestBus(namespace, options.natsUrl);
  stoppers.push(() => gatewayBus.close());
  const redis = connectTestRedis();
  stoppers.push(() => redis.disconnect());
  // As main.ts does, the routes start once Redis is ready: until then the rate limiter lets
  // requests through uncounted, and a test's first request could be one of them.
  await redis.ping();

  const logger = createLogger('gateway-routes-test', 'silent');
  const service: Service = createService({
    name: 'gateway-routes-test',
    port: 0,
    host: '127.0.0.1',
    logger,
    metrics: createMetrics('gateway-routes-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  stoppers.push(() => service.stop());
  service.app.set('trust proxy', options.trustProxy ?? false);
  const router = createApiRouter({
    bus: gatewayBus,
    pool: db.pool,
    bodyLimitBytes: 256 * 1_024,
    importBodyLimitBytes: 32 * 1_024 * 1_024,
    documentUploadMaxBytes: options.documentUploadMaxBytes ?? 25 * 1_024 * 1_024,
    workspaceFileMaxBytes: options.workspaceFileMaxBytes ?? 25 * 1_024 * 1_024,
    submitTimeoutMs: 5_000,
    turnTimeoutMs: 30_000,
    stopping: service.stopping,
    rateLimit: {
      redis,
      namespace,
      logger,
      ...(options.rateLimit ?? {
        perMinute: 600,
        chatPerMinute: 60,
        unauthenticatedPerMinute: 600,
      }),
    },
    corsOrigins: options.corsOrigins ?? [],
    eventStreamsPerUser: options.eventStreamsPerUser ?? 10,
    grafanaUrl: options.grafanaUrl,
  });
  service.app.use('/v1', router);
  const { port } = await service.start();
  const baseUrl = `http://127.0.0.1:${port}${basePath}`;

  const first = await createUser(db.pool, 'alice');
  const second = await createUser(db.pool, 'bob');
  return {
    db,
    bus: gatewayBus,
    alice: { id: first.user.id, key: first.apiKey },
    bob: { id: second.user.id, key: second.apiKey },
    url: baseUrl,
    router,
    services,
    async call(method, route, options = {}) {
      const headers: Record<string, string> = {};
      if (options.key) headers.authorization = `Bearer ${options.key}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${baseUrl}${route}`, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

// The 400 every route answers for bad input, naming the problem.
export function badRequest(message: string | RegExp) {
  return {
    status: 400,
    body: {
      error: {
        code: 'bad_request',
        message: typeof message === 'string' ? message : expect.stringMatching(message),
      },
    },
  };
}
