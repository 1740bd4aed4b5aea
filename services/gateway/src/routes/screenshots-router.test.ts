import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

// GET /v1/screenshots/{id} in front of the real tools service as its own process. A screenshot
// is written straight into the tools schema as browser_screenshot stores it, so that this test
// needs no browser; the whole path, from the tool through the chat to the picture, is e2e's
// (web-ui-screenshots.test.ts).
let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/screenshots', { services: ['tools'] });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

// A PNG's signature, then bytes a sniffer could take for a page, were it let to sniff.
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from('<html><script>alert(1)</script></html>'),
  Buffer.from([0, 255, 128]),
]);

async function storeScreenshot(userId: string): Promise<string> {
  const id = randomUUID();
  await harness.db.pool.query(
    `INSERT INTO tools.screenshots (id, user_id, url, png, width, height)
     VALUES ($1, $2, 'https://example.com/', $3, 1280, 800)`,
    [id, userId, PNG],
  );
  return id;
}

async function get(id: string, key: string | undefined): Promise<Response> {
  return fetch(`${harness.url}/${id}`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
}

describe('GET /v1/screenshots/{id}', () => {
  it("answers the owner with the PNG's bytes, as an image that cannot run or be sniffed", async () => {
    const id = await storeScreenshot(alice.id);
    const response = await get(id, alice.key);

    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(PNG)).toBe(true);
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(response.headers.get('cache-control')).toBe('private, no-store');
    expect(response.headers.get('content-length')).toBe(String(PNG.length));
  });

  it("answers 404 to another user's screenshot, as to one that does not exist", async () => {
    const id = await storeScreenshot(alice.id);
    const notFound = { error: { code: 'not_found', message: 'no such screenshot' } };

    const stranger = await get(id, bob.key);
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual(notFound);
    const missing = await get(randomUUID(), alice.key);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual(notFound);
  });

  it('answers 401 without a key, and 400 to an id that is not a uuid', async () => {
    const id = await storeScreenshot(alice.id);
    expect((await get(id, undefined)).status).toBe(401);
    expect(await harness.call('GET', '/nope', { key: alice.key })).toEqual(badRequest(/^id: /));
  });
});
