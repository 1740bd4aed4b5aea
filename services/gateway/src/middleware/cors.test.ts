import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from '../routes/router-fixture';

const ALLOWED = 'https://app.example.com';

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', {
    corsOrigins: [ALLOWED, 'http://localhost:5173'],
  });
});

afterAll(async () => {
  await harness?.stop();
});

function preflight(origin: string, method = 'POST') {
  return fetch(`${harness.url}/chat`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type',
    },
  });
}

describe('CORS', () => {
  it('answers a preflight from a listed origin, allowing the Authorization header', async () => {
    const response = await preflight(ALLOWED);

    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    expect(response.headers.get('access-control-allow-methods')).toContain('POST');
    expect(response.headers.get('access-control-allow-headers')).toMatch(/\bAuthorization\b/);
    expect(response.headers.get('access-control-allow-headers')).toMatch(/\bContent-Type\b/);
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    expect(response.headers.get('vary')).toMatch(/Origin/);
  });

  it('refuses a preflight from any other origin', async () => {
    const response = await preflight('https://evil.example.com');

    expect(response.status).toBe(403);
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    expect(await response.json()).toEqual({
      error: {
        code: 'forbidden',
        message: 'this origin may not call the API (see CORS_ORIGINS)',
      },
    });
  });

  it('lets a listed origin read answers, errors included, and the headers it needs', async () => {
    const ok = await fetch(`${harness.url}/keys`, {
      headers: { origin: ALLOWED, authorization: `Bearer ${harness.alice.key}` },
    });
    const unauthorized = await fetch(`${harness.url}/keys`, { headers: { origin: ALLOWED } });

    expect(ok.status).toBe(200);
    for (const response of [ok, unauthorized]) {
      expect(response.headers.get('access-control-allow-origin')).toBe(ALLOWED);
      expect(response.headers.get('access-control-expose-headers')).toMatch(
        /x-request-id.*Retry-After.*RateLimit-Remaining/,
      );
    }
    expect(unauthorized.status).toBe(401);
  });

  it('gives an unlisted origin no CORS headers, so its pages cannot read the answer', async () => {
    const response = await fetch(`${harness.url}/keys`, {
      headers: { origin: 'https://evil.example.com', authorization: `Bearer ${harness.alice.key}` },
    });

    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS with no origins listed (the default)', () => {
  let sameOriginOnly: RouterFixture;

  beforeAll(async () => {
    sameOriginOnly = await startRouterFixture('/v1');
  });

  afterAll(async () => {
    await sameOriginOnly?.stop();
  });

  it('refuses every preflight and still serves requests without Origin', async () => {
    const response = await fetch(`${sameOriginOnly.url}/keys`, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED, 'access-control-request-method': 'GET' },
    });
    const plain = await fetch(`${sameOriginOnly.url}/keys`, {
      headers: { authorization: `Bearer ${sameOriginOnly.alice.key}` },
    });

    expect(response.status).toBe(403);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();
  });
});
