import { ENDPOINTS, endpointName } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RouterFixture, startRouterFixture } from './router-fixture';

let fixture: RouterFixture;
let baseUrl: string;
let key: string;

beforeAll(async () => {
  fixture = await startRouterFixture('', {
    rateLimit: { perMinute: 0, chatPerMinute: 0, unauthenticatedPerMinute: 0 },
  });
  baseUrl = fixture.url;
  key = fixture.alice.key;
});

afterAll(async () => {
  await fixture?.stop();
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

// Every route mounted under `prefix`, as "METHOD /path/{param}" (a wildcard `*param` too),
// through nested routers.
function mountedRoutes(stack: unknown[], prefix: string): string[] {
  return stack.flatMap((entry) => {
    const layer = Layer.parse(entry);
    if (layer.route) {
      const path = `${prefix}/${layer.route.path}`.replace(/\/+/g, '/').replace(/\/$/, '');
      return Object.keys(layer.route.methods).map(
        (method) => `${method.toUpperCase()} ${path.replace(/[:*](\w+)/g, '{$1}')}`,
      );
    }
    const inner = stackOf(layer.handle);
    return inner ? mountedRoutes(inner, `${prefix}/${layer.rawPath ?? ''}`) : [];
  });
}

describe('the API router', () => {
  it('mounts exactly the declared endpoints', () => {
    const mounted = new Set(mountedRoutes(fixture.router.stack, '/v1'));
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
    // PATCH /v1/schedules/preview is PATCH /v1/schedules/{id} with a bad id: a path another
    // declared endpoint of that method takes as its parameter is that endpoint's to answer.
    const isTakenByParam = (method: string, path: string) =>
      ENDPOINTS.some(
        (endpoint) =>
          endpoint.method === method.toLowerCase() &&
          new RegExp(`^${endpoint.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(path),
      );
    const undeclared = [
      ...paths.flatMap((path) =>
        methods
          .filter((method) => !declared.has(`${method} ${path}`))
          .filter((method) => !isTakenByParam(method, path))
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
