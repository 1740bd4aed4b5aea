import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { ENDPOINTS } from '@jarvis/contracts';
import { createPool, type Pool } from '@jarvis/db';
import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { connectTestRedis, uniqueNamespace } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiRouter } from '../routes/api-router';
import { DOCS_PAGE_CSP } from './docs-page';
import { buildOpenApiDocument } from './openapi-document';

let bus: Bus;
let redis: Redis;
let pool: Pool;
let service: Service;
let baseUrl: string;

beforeAll(async () => {
  const namespace = uniqueNamespace('openapi');
  bus = await connectTestBus(namespace);
  redis = connectTestRedis();
  // Never queried: nothing here sends a key, so no route gets as far as the database.
  pool = createPool({ url: 'postgres://nobody@127.0.0.1:1/none', applicationName: 'openapi-test' });
  const logger = createLogger('openapi-test', 'silent');
  const router = createApiRouter({
    bus,
    pool,
    bodyLimitBytes: 256 * 1_024,
    importBodyLimitBytes: 1_024 * 1_024,
    submitTimeoutMs: 5_000,
    turnTimeoutMs: 5_000,
    rateLimit: {
      redis,
      namespace,
      logger,
      perMinute: 600,
      chatPerMinute: 60,
      unauthenticatedPerMinute: 600,
    },
    corsOrigins: [],
    eventStreamsPerUser: 10,
    stopping: new AbortController().signal,
  });
  service = createService({
    name: 'openapi-test',
    port: 0,
    host: '127.0.0.1',
    logger,
    metrics: createMetrics('openapi-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  service.app.use('/v1', router);
  const { port } = await service.start();
  baseUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await service?.stop();
  await bus?.close();
  redis?.disconnect();
  await pool?.end();
});

describe('GET /v1/openapi.json', () => {
  it('answers the document without a key', async () => {
    const response = await fetch(`${baseUrl}/v1/openapi.json`);

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await response.json()).toEqual(
      JSON.parse(JSON.stringify(buildOpenApiDocument(ENDPOINTS))),
    );
  });
});

describe('GET /v1/docs', () => {
  it('answers the page without a key, under a policy that lets only its own scripts run', async () => {
    const response = await fetch(`${baseUrl}/v1/docs`);
    const html = await response.text();

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toBe(DOCS_PAGE_CSP);
    expect(DOCS_PAGE_CSP).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/);
    // Nothing from another origin: the page must work on a server that is offline.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain("url: '/v1/openapi.json'");
  });

  it('serves the script and stylesheet the page loads, from the npm package', async () => {
    const html = await (await fetch(`${baseUrl}/v1/docs`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]);

    expect(assets).toEqual([
      '/v1/docs/assets/swagger-ui.css',
      '/v1/docs/assets/swagger-ui-bundle.js',
    ]);
    const css = await fetch(`${baseUrl}/v1/docs/assets/swagger-ui.css`);
    const script = await fetch(`${baseUrl}/v1/docs/assets/swagger-ui-bundle.js`);

    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^(application|text)\/javascript/);
    expect(await script.text()).toContain('SwaggerUIBundle');
  });

  it('serves no other file of the package', async () => {
    const response = await fetch(`${baseUrl}/v1/docs/assets/index.html`);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { code: 'bad_request', message: expect.stringMatching(/^file: /) },
    });
  });
});
