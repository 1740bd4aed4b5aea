import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from '../routes/router-fixture';

let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1');
});

afterAll(async () => {
  await harness?.stop();
});

const REFUSED = {
  error: {
    code: 'bad_request',
    message:
      'API keys are accepted only in the Authorization header ("Authorization: Bearer <key>"), never in the URL',
  },
};

describe('a key in the URL', () => {
  it.each([
    'api_key',
    'key',
    'token',
    'access_token',
    'API_KEY',
  ])('is refused with 400 in ?%s=', async (name) => {
    const response = await fetch(`${harness.url}/keys?${name}=${harness.alice.key}`);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(REFUSED);
  });

  it.each([
    ['under any name', (key: string) => `q=${key}`],
    ['as a parameter name', (key: string) => `${key}=1`],
    ['inside a longer value', (key: string) => `auth=${encodeURIComponent(`Bearer ${key}`)}`],
    [
      'percent-encoded',
      (key: string) => `x=${[...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}`,
    ],
    ['in a bracketed name', (key: string) => `filter[owner]=${key}`],
    ['after other parameters', (key: string) => `limit=5&cursor=${key}`],
  ])('is refused %s', async (_how, query) => {
    const response = await fetch(`${harness.url}/conversations?${query(harness.alice.key)}`, {
      headers: { authorization: `Bearer ${harness.alice.key}` },
    });

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(REFUSED);
  });

  it('is refused even beside a good Authorization header, on any route', async () => {
    const response = await fetch(`${harness.url}/usage?token=${harness.alice.key}`, {
      headers: { authorization: `Bearer ${harness.alice.key}` },
    });

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(REFUSED);
  });

  it('leaves other query parameters alone', async () => {
    const response = await fetch(`${harness.url}/keys?keys=1&monkey=2&prefix=jv_short`, {
      headers: { authorization: `Bearer ${harness.alice.key}` },
    });

    expect(response.status).toBe(200);
  });
});
