import {
  CreateApiKeyResponse,
  ErrorBody,
  ListApiKeysResponse,
  ListUsersResponse,
} from '@jarvis/contracts';
import { type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const APP_ORIGIN = 'https://app.example.com';
const PER_MINUTE = 30;
const CHAT_PER_MINUTE = 4;

// Who gets in and how often, through the running gateway: keys, scopes, limits, CORS and the
// headers every answer carries.
describe('gateway access', () => {
  let fixture: StackFixture;
  let url: string;

  const request = (path: string, init: { key?: string; method?: string; body?: unknown } = {}) =>
    fetch(`${url}${path}`, {
      method: init.method ?? 'GET',
      headers: {
        ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });

  beforeAll(async () => {
    fixture = await startStackFixture({
      BODY_LIMIT_BYTES: '4096',
      RATE_LIMIT_PER_MINUTE: String(PER_MINUTE),
      CHAT_RATE_LIMIT_PER_MINUTE: String(CHAT_PER_MINUTE),
      CORS_ORIGINS: APP_ORIGIN,
    });
    url = fixture.stack.gatewayUrl;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('manages a key from creation to revocation', async () => {
    const { apiKey } = await fixture.createUser('kim');
    const created = await request('/v1/keys', {
      key: apiKey,
      method: 'POST',
      body: { name: 'cli' },
    });
    expect(created.status).toBe(201);
    const { key, apiKey: cliKey } = CreateApiKeyResponse.parse(await created.json());

    expect((await request('/v1/keys', { key: cliKey })).status).toBe(200);
    // "Last used" is written off the request's path, a moment later.
    await waitFor(
      async () => {
        const listed = ListApiKeysResponse.parse(
          await (await request('/v1/keys', { key: apiKey })).json(),
        );
        return listed.keys.find((each) => each.id === key.id)?.lastUsedAt ?? undefined;
      },
      { what: 'lastUsedAt of the new key' },
    );

    const other = await fixture.createUser('lee');
    const notHers = await request(`/v1/keys/${key.id}`, { key: other.apiKey, method: 'DELETE' });
    expect(notHers.status).toBe(404);

    expect((await request(`/v1/keys/${key.id}`, { key: apiKey, method: 'DELETE' })).status).toBe(
      204,
    );
    const revoked = await request('/v1/keys', { key: cliKey });
    expect(revoked.status).toBe(401);
  });

  it('keeps admin routes to admin keys', async () => {
    const { apiKey } = await fixture.createUser('max');

    expect((await request('/v1/admin/users', { key: apiKey })).status).toBe(403);
    const users = await request('/v1/admin/users', { key: fixture.adminKey });
    expect(users.status).toBe(200);
    const max = ListUsersResponse.parse(await users.json()).users.find(
      (user) => user.name === 'max',
    );
    expect(max).toMatchObject({ activeKeys: 1, revokedKeys: 0 });
  });

  it('refuses a key in the URL', async () => {
    const { apiKey } = await fixture.createUser('ned');

    const response = await fetch(`${url}/v1/keys?api_key=${apiKey}`);

    expect(response.status).toBe(400);
    expect(ErrorBody.parse(await response.json()).error.message).toMatch(/Authorization header/);
  });

  it('limits each key, admitting exactly the limit out of a concurrent burst', async () => {
    const { apiKey } = await fixture.createUser('olga');

    const responses = await Promise.all(
      Array.from({ length: PER_MINUTE + 20 }, () => request('/v1/keys', { key: apiKey })),
    );

    const limited = responses.filter((response) => response.status === 429);
    expect(responses.filter((response) => response.status === 200)).toHaveLength(PER_MINUTE);
    expect(limited).toHaveLength(20);
    const first = limited[0];
    expect(Number(first?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(first?.headers.get('ratelimit-remaining')).toBe('0');
    expect(ErrorBody.parse(await first?.json()).error.code).toBe('rate_limited');
  });

  it('holds chat turns to their stricter limit', async () => {
    const { apiKey } = await fixture.createUser('pia');

    // Empty bodies: each is counted, then refused with 400, so no model turn runs.
    const responses = await Promise.all(
      Array.from({ length: CHAT_PER_MINUTE + 3 }, () =>
        request('/v1/chat', { key: apiKey, method: 'POST', body: {} }),
      ),
    );

    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([
      ...Array.from({ length: CHAT_PER_MINUTE }, () => 400),
      ...Array.from({ length: 3 }, () => 429),
    ]);
  });

  it('answers CORS preflights for listed origins only', async () => {
    const preflight = (origin: string) =>
      fetch(`${url}/v1/chat`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });

    const allowed = await preflight(APP_ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(allowed.headers.get('access-control-allow-headers')).toMatch(/Authorization/);

    const denied = await preflight('https://elsewhere.example.com');
    expect(denied.status).toBe(403);
    expect(denied.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('puts security headers and a request id on every answer, errors included', async () => {
    const { apiKey } = await fixture.createUser('quinn');
    const answers = {
      ok: await request('/v1/keys', { key: apiKey }),
      unauthorized: await request('/v1/keys'),
      unknownRoute: await request('/v1/nope', { key: apiKey }),
      malformed: await fetch(`${url}/v1/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: '{"name": ',
      }),
      tooLarge: await request('/v1/keys', {
        key: apiKey,
        method: 'POST',
        body: { name: 'x'.repeat(5_000) },
      }),
    };

    expect(answers.ok.status).toBe(200);
    expect(answers.unauthorized.status).toBe(401);
    expect(answers.unknownRoute.status).toBe(404);
    expect(answers.malformed.status).toBe(400);
    expect(answers.tooLarge.status).toBe(413);
    for (const [name, response] of Object.entries(answers)) {
      expect.soft(response.headers.get('x-request-id'), name).toMatch(/^[0-9a-f-]{36}$/);
      expect.soft(response.headers.get('x-content-type-options'), name).toBe('nosniff');
      expect.soft(response.headers.get('x-frame-options'), name).toBe('SAMEORIGIN');
      expect.soft(response.headers.get('strict-transport-security'), name).toMatch(/max-age=/);
      expect
        .soft(response.headers.get('content-security-policy'), name)
        .toMatch(/default-src 'self'/);
      expect.soft(response.headers.get('x-powered-by'), name).toBeNull();
    }
    expect(await answers.unknownRoute.json()).toEqual({
      error: { code: 'not_found', message: 'no route for GET /v1/nope' },
    });
    expect(ErrorBody.parse(await answers.malformed.json()).error.code).toBe('bad_request');
    expect(ErrorBody.parse(await answers.tooLarge.json()).error.code).toBe('payload_too_large');
  });
});
