import { connectTestBus } from '@jarvis/bus/testing';
import { ENDPOINTS, endpointName } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import {
  connectTestRedis,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import type { Router } from 'express';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createUser } from '../services/api-keys';
import { createApiRouter } from './api-router';

let db: TestDatabase;
let redis: Redis;
let router: Router;
let service: Service;
let close: () => Promise<void>;
let baseUrl: string;
let key: string;

beforeAll(async () => {
  db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'gateway',
    directory: new URL('../../migrations', import.meta.url),
  });
  const namespace = uniqueNamespace('api-router');
  const bus = await connectTestBus(namespace);
  close = () => bus.close();
  redis = connectTestRedis();
  const logger = createLogger('api-router-test', 'silent');
  router = createApiRouter({
    bus,
    pool: db.pool,
    bodyLimitBytes: 256 * 1_024,
    importBodyLimitBytes: 1_024 * 1_024,
    submitTimeoutMs: 5_000,
    turnTimeoutMs: 5_000,
    rateLimit: {
      redis,
      namespace,
      logger,
      perMinute: 0,
      chatPerMinute: 0,
      unauthenticatedPerMinute: 0,
    },
    corsOrigins: [],
    eventStreamsPerUser: 10,
    stopping: new AbortController().signal,
  });
  service = createService({
    name: 'api-router-test',
    port: 0,
    host: '127.0.0.1',
    logger,
    metrics: createMetrics('api-router-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  service.app.use('/v1', router);
  const { port } = await service.start();
  baseUrl = `http://127.0.0.1:${port}`;
  key = (await createUser(db.pool, 'alice')).apiKey;
});

afterAll(async () => {
  await service?.stop();
  await close?.();
  redis?.disconnect();
  await db?.stop();
});

// What express keeps of each layer: a route with its methods, or a mounted router's path.
const Layer = z.object({
  rawPath: z.string().optional(),
  route: z.object({ path: z.string(), methods: z.record(z.string(), z.boolean()) }).optional(),
  handle: z.unknown(),
});

function stackOf(handle: unknown): unknown[] | undefined {
  if (typeof handle !== 'function') return undefined;
  const stack: unknown = Reflect.get(handle, 'stack');
  return Array.isArray(stack) ? stack : undefined;
}

// Every route mounted under `prefix`, as "METHOD /path/{param}", through nested routers.
function mountedRoutes(stack: unknown[], prefix: string): string[] {
  return stack.flatMap((entry) => {
    const layer = Layer.parse(entry);
    if (layer.route) {
      const path = `${prefix}/${layer.route.path}`.replace(/\/+/g, '/').replace(/\/$/, '');
      return Object.keys(layer.route.methods).map(
        (method) => `${method.toUpperCase()} ${path.replace(/:(\w+)/g, '{$1}')}`,
      );
    }
    const inner = stackOf(layer.handle);
    return inner ? mountedRoutes(inner, `${prefix}/${layer.rawPath ?? ''}`) : [];
  });
}

describe('the API router', () => {
  it('mounts exactly the declared endpoints', () => {
    const mounted = new Set(mountedRoutes(router.stack, '/v1'));
    const declared = new Set(ENDPOINTS.map(endpointName));

    expect(
      [...mounted].filter((route) => !declared.has(route)),
      'mounted but not declared in @jarvis/contracts (src/http/endpoints)',
    ).toEqual([]);
    expect(
      [...declared].filter((route) => !mounted.has(route)),
      'declared but not mounted',
    ).toEqual([]);
  });

  it('answers 404 to every method an endpoint does not declare, and to any other path', async () => {
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
    const declared = new Set(ENDPOINTS.map(endpointName));
    const paths = [...new Set(ENDPOINTS.map((endpoint) => endpoint.path))];
    const undeclared = [
      ...paths.flatMap((path) =>
        methods
          .filter((method) => !declared.has(`${method} ${path}`))
          .map((method) => ({ method, path })),
      ),
      { method: 'GET', path: '/v1/nope' },
      { method: 'POST', path: '/v1/memory/facts/{id}/extra' },
      { method: 'GET', path: '/v1/admin/nope' },
    ];

    expect(undeclared.length).toBeGreaterThan(100);
    for (const { method, path } of undeclared) {
      const url = `${baseUrl}${path.replace(/\{\w+\}/g, '00000000-0000-4000-8000-000000000000')}`;
      const response = await fetch(url, { method, headers: { authorization: `Bearer ${key}` } });

      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await response.json(), `${method} ${path}`).toEqual({
        error: { code: 'not_found', message: expect.stringMatching(/^no route for /) },
      });
    }
  });

  it('asks for a key before answering 404 anywhere else under /v1', async () => {
    const response = await fetch(`${baseUrl}/v1/nope`);

    expect(response.status).toBe(401);
  });
});
