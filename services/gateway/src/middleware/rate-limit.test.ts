import { createService } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from '../routes/router-fixture';
import { createUser } from '../services/api-keys';
import { createRateLimits } from './rate-limit';

const PER_MINUTE = 10;
const CHAT_PER_MINUTE = 3;
const UNAUTHENTICATED_PER_MINUTE = 5;

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', {
    rateLimit: {
      perMinute: PER_MINUTE,
      chatPerMinute: CHAT_PER_MINUTE,
      unauthenticatedPerMinute: UNAUTHENTICATED_PER_MINUTE,
    },
  });
});

afterAll(async () => {
  await harness?.stop();
});

async function newKey(): Promise<string> {
  return (await createUser(harness.db.pool, 'limited')).apiKey;
}

function send(key: string | undefined, method = 'GET', route = '/keys') {
  return fetch(`${harness.url}${route}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
    },
    ...(method === 'POST' ? { body: '{}' } : {}),
  });
}

function rateHeaders(response: Response) {
  return {
    limit: response.headers.get('ratelimit-limit'),
    remaining: response.headers.get('ratelimit-remaining'),
    reset: response.headers.get('ratelimit-reset'),
  };
}

describe('per-user rate limits', () => {
  it('counts down on every response, then answers 429 with Retry-After', async () => {
    const key = await newKey();
    for (let used = 1; used <= PER_MINUTE; used++) {
      const response = await send(key);
      expect(response.status).toBe(200);
      expect(rateHeaders(response)).toEqual({
        limit: String(PER_MINUTE),
        remaining: String(PER_MINUTE - used),
        reset: expect.stringMatching(/^(59|60)$/),
      });
    }

    const refused = await send(key);

    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error: {
        code: 'rate_limited',
        message: expect.stringMatching(
          /^rate limit reached: 10 requests per minute for this user; retry in (59|60) s$/,
        ),
      },
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(rateHeaders(refused)).toMatchObject({ limit: '10', remaining: '0' });
    expect(refused.headers.get('x-request-id')).toBeTruthy();
  });

  it('admits exactly the limit out of a concurrent burst', async () => {
    const key = await newKey();

    const responses = await Promise.all(Array.from({ length: 40 }, () => send(key)));

    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(PER_MINUTE);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40 - PER_MINUTE);
  });

  it("counts all of a user's keys together, and each user apart", async () => {
    const key = await newKey();
    const created = await send(key, 'POST');
    const { apiKey: sameUsersOtherKey } = (await created.json()) as { apiKey: string };
    await Promise.all(Array.from({ length: PER_MINUTE - 1 }, () => send(key)));
    expect((await send(key)).status).toBe(429);

    expect((await send(sameUsersOtherKey)).status).toBe(429);
    expect((await send(harness.bob.key)).status).toBe(200);
  });

  it('holds chat turns to their own, stricter limit', async () => {
    const key = await newKey();
    for (let turn = 1; turn <= CHAT_PER_MINUTE; turn++) {
      const response = await send(key, 'POST', '/chat');
      // Counted before the body is read: a bad turn costs a slot like a good one.
      expect(response.status).toBe(400);
      expect(rateHeaders(response)).toMatchObject({
        limit: String(CHAT_PER_MINUTE),
        remaining: String(CHAT_PER_MINUTE - turn),
      });
    }

    const refused = await send(key, 'POST', '/chat');

    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /^rate limit reached: 3 chat turns per minute/,
    );
    // A refused turn took no slot of the general limit.
    const other = await send(key);
    expect(other.status).toBe(200);
    expect(rateHeaders(other).remaining).toBe(String(PER_MINUTE - CHAT_PER_MINUTE - 1));
  });
});

describe('requests without a valid key', () => {
  it('are limited per client address, a wrong key counting like none', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer jv_guessedButWrong' },
      { authorization: 'Basic YWxpY2U6c2VjcmV0' },
      {},
      { authorization: `Bearer ${harness.alice.key} extra` },
    ];
    for (const [index, headers] of attempts.entries()) {
      // Not trusted here (the harness trusts no proxy): the header cannot dodge the limit.
      const response = await fetch(`${harness.url}/keys`, {
        headers: { ...headers, 'x-forwarded-for': `203.0.113.${index}` },
      });
      expect(response.status).toBe(401);
      expect(rateHeaders(response)).toMatchObject({
        limit: String(UNAUTHENTICATED_PER_MINUTE),
        remaining: String(UNAUTHENTICATED_PER_MINUTE - index - 1),
      });
    }

    const refused = await fetch(`${harness.url}/keys`, {
      headers: { 'x-forwarded-for': '198.51.100.7' },
    });

    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error: {
        code: 'rate_limited',
        message: expect.stringMatching(
          /^rate limit reached: 5 requests without a valid API key per minute from this address; retry in (59|60) s$/,
        ),
      },
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    // A valid key from the same address is its user's to limit, not the address's.
    expect((await send(harness.bob.key)).status).toBe(200);
  });
});

describe('behind a trusted proxy', () => {
  let proxied: RouterFixture;

  beforeAll(async () => {
    proxied = await startRouterFixture('/v1', {
      rateLimit: { perMinute: 0, chatPerMinute: 0, unauthenticatedPerMinute: 2 },
      trustProxy: ['loopback'],
    });
  });

  afterAll(async () => {
    await proxied?.stop();
  });

  it("counts each client by the proxy's X-Forwarded-For", async () => {
    const from = (client: string) =>
      fetch(`${proxied.url}/keys`, { headers: { 'x-forwarded-for': client } });

    const first = [await from('203.0.113.1'), await from('203.0.113.1'), await from('203.0.113.1')];
    const other = await from('203.0.113.2');

    expect(first.map((response) => response.status)).toEqual([401, 401, 429]);
    expect(other.status).toBe(401);
  });
});

describe('without Redis', () => {
  it('lets requests through and warns once', async () => {
    const lines: string[] = [];
    const logger = createLogger('rate-limit-test', 'warn', { write: (line) => lines.push(line) });
    // Nothing listens on port 1: the client never becomes ready.
    const redis = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    const service = createService({
      name: 'rate-limit-test',
      port: 0,
      host: '127.0.0.1',
      logger,
      metrics: createMetrics('rate-limit-test'),
      checks: {},
      dependencyLossExitMs: 60_000,
      onStop: async () => {},
      exit: () => {},
    });
    const { countUnauthenticated } = createRateLimits({
      redis,
      namespace: 'no-redis',
      logger,
      perMinute: 1,
      chatPerMinute: 1,
      unauthenticatedPerMinute: 1,
    });
    service.app.use(async (req, res, next) => {
      next(await countUnauthenticated(req, res));
    });
    service.app.get('/ping', (_req, res) => {
      res.json({ ok: true });
    });
    const { port } = await service.start();
    try {
      const statuses = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const response = await fetch(`http://127.0.0.1:${port}/ping`, {
          headers: { authorization: 'Bearer jv_anyKeyAtAllWillDoHere' },
        });
        statuses.push(response.status);
      }

      expect(statuses).toEqual([200, 200, 200]);
      const warnings = lines.filter((line) => line.includes('rate limits off'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).not.toContain('jv_anyKeyAtAllWillDoHere');
    } finally {
      await service.stop();
      redis.disconnect();
    }
  });
});
