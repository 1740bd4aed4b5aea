import { createService } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterHarness, startRouterHarness } from '../routes/router-test-harness';
import { createUser } from '../services/api-keys';
import { limitRequests } from './rate-limit';

const PER_MINUTE = 10;
const CHAT_PER_MINUTE = 3;

let harness: RouterHarness;

beforeAll(async () => {
  harness = await startRouterHarness('/v1', () => [], {
    rateLimit: { perMinute: PER_MINUTE, chatPerMinute: CHAT_PER_MINUTE },
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

describe('per-key rate limits', () => {
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
          /^rate limit reached: 10 requests per minute for this API key; retry in (59|60) s$/,
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

  it('counts each key apart, whoever owns it', async () => {
    const key = await newKey();
    await Promise.all(Array.from({ length: PER_MINUTE }, () => send(key)));
    expect((await send(key)).status).toBe(429);

    const created = await fetch(`${harness.url}/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${harness.alice.key}` },
    });
    const { apiKey: sameUsersOtherKey } = (await created.json()) as { apiKey: string };

    expect((await send(sameUsersOtherKey)).status).toBe(200);
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

  it('does not count requests without a key', async () => {
    const response = await send(undefined);

    expect(response.status).toBe(401);
    expect(response.headers.get('ratelimit-limit')).toBeNull();
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
    service.app.use(
      limitRequests({ redis, namespace: 'no-redis', logger, perMinute: 1, chatPerMinute: 1 }),
    );
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
