import { randomUUID } from 'node:crypto';
import { CreateApiKeyResponse, ListApiKeysResponse } from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, ensureAdminKey, MAX_ACTIVE_KEYS_PER_USER } from '../services/api-keys';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/keys');
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

async function createKey(key: string, body: unknown = {}) {
  const reply = await call('POST', '/', { key, body });
  expect(reply.status).toBe(201);
  return CreateApiKeyResponse.parse(reply.body);
}

async function listKeys(key: string) {
  const reply = await call('GET', '/', { key });
  expect(reply.status).toBe(200);
  return ListApiKeysResponse.parse(reply.body).keys;
}

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'API key not found' } },
};
const ADMIN_KEY_KEPT = {
  status: 409,
  body: {
    error: {
      code: 'conflict',
      message:
        'the admin key cannot be revoked through the API: rotate it by setting a new JARVIS_ADMIN_KEY in the environment and restarting the gateway, which revokes the old one',
    },
  },
};
const REVOKED = {
  status: 401,
  body: { error: { code: 'unauthorized', message: 'invalid or revoked API key' } },
};

describe('authentication', () => {
  it.each([
    ['GET', '/'],
    ['POST', '/'],
    ['DELETE', `/${randomUUID()}`],
  ])('answers 401 to %s %s without a key', async (method, route) => {
    const reply = await call(method, route);

    expect(reply.status).toBe(401);
  });
});

describe('POST /v1/keys', () => {
  it('makes a further key for the same user, shown once, that works at once', async () => {
    const created = await createKey(alice.key, { name: '  laptop ' });

    expect(created.apiKey).toMatch(/^jv_[A-Za-z0-9_-]{32}$/);
    expect(created.apiKey).not.toBe(alice.key);
    expect(created.key).toMatchObject({
      name: 'laptop',
      prefix: created.apiKey.slice(0, 11),
      scope: 'user',
      lastUsedAt: null,
      revokedAt: null,
    });
    const seenWithNewKey = await listKeys(created.apiKey);
    expect(seenWithNewKey.map((key) => key.id)).toContain(created.key.id);
    expect(seenWithNewKey.map((key) => key.prefix)).toContain(alice.key.slice(0, 11));
  });

  it('takes no body at all for an unnamed key', async () => {
    const response = await fetch(harness.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}` },
    });

    expect(response.status).toBe(201);
    expect(CreateApiKeyResponse.parse(await response.json()).key.name).toBeNull();
  });

  it.each([
    ['an empty name', { name: ' ' }, 'name: name must not be empty'],
    ['a name of another type', { name: 7 }, /^name: /],
    ['a field it does not know', { scope: 'admin' }, /scope/],
  ])('answers 400 to %s', async (_label, body, message) => {
    expect(await call('POST', '/', { key: alice.key, body })).toEqual(badRequest(message));
  });

  it('answers 400 to a body that is not JSON', async () => {
    const response = await fetch(harness.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'text/plain' },
      body: 'name=laptop',
    });

    expect(response.status).toBe(400);
  });

  it(`refuses more than ${MAX_ACTIVE_KEYS_PER_USER} active keys with 409`, async () => {
    const { user, apiKey } = await createUser(harness.db.pool, 'hoarder');
    await harness.db.pool.query(
      `INSERT INTO gateway.api_keys (id, user_id, prefix, key_hash, scope)
       SELECT gen_random_uuid(), $1, 'jv_filler', md5(random()::text || n), 'user'
       FROM generate_series(2, $2) AS n`,
      [user.id, MAX_ACTIVE_KEYS_PER_USER],
    );

    const reply = await call('POST', '/', { key: apiKey, body: {} });

    expect(reply.status).toBe(409);
    expect(reply.body).toEqual({
      error: { code: 'conflict', message: expect.stringContaining('revoke one first') },
    });
  });
});

describe('GET /v1/keys', () => {
  it("lists only the key's own user's keys, newest first, without the keys or their hashes", async () => {
    const { user, apiKey } = await createUser(harness.db.pool, 'dana');
    const second = await createKey(apiKey, { name: 'phone' });

    const keys = await listKeys(apiKey);

    expect(keys.map((key) => key.id)).toHaveLength(2);
    expect(keys[0]?.id).toBe(second.key.id);
    expect(Object.keys(keys[0] ?? {}).sort()).toEqual(
      ['createdAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'scope'].sort(),
    );
    const { rows } = await harness.db.pool.query<{ key_hash: string }>(
      'SELECT key_hash FROM gateway.api_keys WHERE user_id = $1',
      [user.id],
    );
    const text = JSON.stringify(keys);
    for (const row of rows) expect(text).not.toContain(row.key_hash);
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain(second.apiKey);
    expect((await listKeys(bob.key)).map((key) => key.id)).not.toContain(second.key.id);
  });

  it('shows when a key was last used', async () => {
    const created = await createKey(alice.key);
    await call('GET', '/', { key: created.apiKey });

    await waitFor(
      async () => {
        const keys = await listKeys(alice.key);
        return keys.find((key) => key.id === created.key.id)?.lastUsedAt ?? undefined;
      },
      { what: 'lastUsedAt to be set' },
    );
  });
});

describe('DELETE /v1/keys/{id}', () => {
  it('revokes a key: it answers 401 from then on and shows when it was revoked', async () => {
    const created = await createKey(alice.key);

    expect(await call('DELETE', `/${created.key.id}`, { key: alice.key })).toEqual({
      status: 204,
      body: undefined,
    });

    expect(await call('GET', '/', { key: created.apiKey })).toEqual(REVOKED);
    const listed = (await listKeys(alice.key)).find((key) => key.id === created.key.id);
    expect(listed?.revokedAt).toEqual(expect.any(String));

    // Again: nothing changes, the first time stays.
    expect((await call('DELETE', `/${created.key.id}`, { key: alice.key })).status).toBe(204);
    const again = (await listKeys(alice.key)).find((key) => key.id === created.key.id);
    expect(again?.revokedAt).toBe(listed?.revokedAt);
  });

  it('revokes the key in use, which stops working with the next request', async () => {
    const created = await createKey(alice.key);

    const reply = await call('DELETE', `/${created.key.id}`, { key: created.apiKey });

    expect(reply.status).toBe(204);
    expect(await call('GET', '/', { key: created.apiKey })).toEqual(REVOKED);
    expect((await call('GET', '/', { key: alice.key })).status).toBe(200);
  });

  it("answers 404 to another user's key, which keeps working", async () => {
    const bobs = await createKey(bob.key);

    expect(await call('DELETE', `/${bobs.key.id}`, { key: alice.key })).toEqual(NOT_FOUND);

    expect((await call('GET', '/', { key: bobs.apiKey })).status).toBe(200);
  });

  it('refuses to revoke the configured admin key, so the gateway still starts with it', async () => {
    const adminKey = `jv_configured-admin-key-${randomUUID()}`;
    await ensureAdminKey(harness.db.pool, adminKey);
    const own = (await listKeys(adminKey)).find((key) => key.scope === 'admin');
    if (!own) throw new Error('the admin key is not listed');

    expect(await call('DELETE', `/${own.id}`, { key: adminKey })).toEqual(ADMIN_KEY_KEPT);

    expect((await call('GET', '/', { key: adminKey })).status).toBe(200);
    // What the gateway does on its next start.
    await expect(ensureAdminKey(harness.db.pool, adminKey)).resolves.toEqual({
      generatedKey: undefined,
    });
  });

  it('answers 404 to a key that does not exist and 400 to an id that is not one', async () => {
    expect(await call('DELETE', `/${randomUUID()}`, { key: alice.key })).toEqual(NOT_FOUND);
    expect(await call('DELETE', '/not-a-uuid', { key: alice.key })).toEqual(badRequest(/^id: /));
  });
});
