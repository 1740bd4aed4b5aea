import { randomUUID } from 'node:crypto';
import {
  CreateApiKeyResponse,
  CreateUserResponse,
  ListApiKeysResponse,
  ListUsersResponse,
} from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureAdminKey } from '../services/api-keys';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

let harness: RouterFixture;
let alice: TestUser;
let bob: TestUser;
let adminKey: string;

beforeAll(async () => {
  harness = await startRouterFixture('/v1');
  ({ alice, bob } = harness);
  const { generatedKey } = await ensureAdminKey(harness.db.pool, undefined);
  if (!generatedKey) throw new Error('expected a generated admin key');
  adminKey = generatedKey;
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

async function usersByName() {
  const reply = await call('GET', '/admin/users', { key: adminKey });
  expect(reply.status).toBe(200);
  const { users } = ListUsersResponse.parse(reply.body);
  return new Map(users.map((user) => [user.name, user]));
}

async function keyIdOf(apiKey: string): Promise<string> {
  const reply = await call('GET', '/keys', { key: apiKey });
  const keys = ListApiKeysResponse.parse(reply.body).keys;
  const own = keys.find((key) => key.prefix === apiKey.slice(0, 11));
  if (!own) throw new Error('key not listed');
  return own.id;
}

describe('scope', () => {
  const routes = [
    ['GET', '/admin/users'],
    ['POST', '/admin/users'],
    ['DELETE', `/admin/keys/${randomUUID()}`],
  ] as const;

  it.each(routes)('answers %s %s with 403 to a user key', async (method, route) => {
    const reply = await call(method, route, {
      key: alice.key,
      body: method === 'POST' ? { name: 'eve' } : undefined,
    });

    expect(reply).toEqual({
      status: 403,
      body: { error: { code: 'forbidden', message: 'this route needs an admin key' } },
    });
  });

  it.each(routes)('answers %s %s with 401 without a key', async (method, route) => {
    expect((await call(method, route)).status).toBe(401);
  });

  it('gives an admin only user keys through /v1/keys', async () => {
    const reply = await call('POST', '/keys', { key: adminKey, body: { name: 'script' } });
    const created = CreateApiKeyResponse.parse(reply.body);

    expect(created.key.scope).toBe('user');
    expect((await call('GET', '/admin/users', { key: created.apiKey })).status).toBe(403);
  });
});

describe('GET /v1/admin/users', () => {
  it('lists every user with how many active and revoked keys each has', async () => {
    await call('POST', '/keys', { key: bob.key, body: {} });
    const users = await usersByName();

    expect(users.get('alice')).toMatchObject({ id: alice.id, activeKeys: 1, revokedKeys: 0 });
    expect(users.get('bob')).toMatchObject({ id: bob.id, activeKeys: 2, revokedKeys: 0 });
    expect(users.get('admin')?.activeKeys).toBeGreaterThanOrEqual(1);
  });
});

describe('POST /v1/admin/users', () => {
  it('creates a user whose key works at once', async () => {
    const reply = await call('POST', '/admin/users', { key: adminKey, body: { name: 'frank' } });

    expect(reply.status).toBe(201);
    const { user, apiKey } = CreateUserResponse.parse(reply.body);
    expect(user.name).toBe('frank');
    expect((await call('GET', '/keys', { key: apiKey })).status).toBe(200);
  });

  it('answers 400 to a bad name', async () => {
    expect(await call('POST', '/admin/users', { key: adminKey, body: { name: '' } })).toEqual(
      badRequest('name: name must not be empty'),
    );
  });
});

describe('DELETE /v1/admin/keys/{id}', () => {
  it("revokes any user's key at once", async () => {
    const reply = await call('POST', '/admin/users', { key: adminKey, body: { name: 'gina' } });
    const { apiKey } = CreateUserResponse.parse(reply.body);
    const id = await keyIdOf(apiKey);

    expect((await call('DELETE', `/admin/keys/${id}`, { key: adminKey })).status).toBe(204);

    expect((await call('GET', '/keys', { key: apiKey })).status).toBe(401);
    expect((await usersByName()).get('gina')).toMatchObject({ activeKeys: 0, revokedKeys: 1 });
  });

  it('refuses to revoke the admin key, which is rotated in the environment', async () => {
    const id = await keyIdOf(adminKey);

    expect(await call('DELETE', `/admin/keys/${id}`, { key: adminKey })).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: expect.stringMatching(
            /^the admin key cannot be revoked through the API: rotate it by setting a new JARVIS_ADMIN_KEY/,
          ),
        },
      },
    });
    expect((await call('GET', '/admin/users', { key: adminKey })).status).toBe(200);
  });

  it('answers 404 to a key that does not exist and 400 to an id that is not one', async () => {
    expect(await call('DELETE', `/admin/keys/${randomUUID()}`, { key: adminKey })).toEqual({
      status: 404,
      body: { error: { code: 'not_found', message: 'API key not found' } },
    });
    expect(await call('DELETE', '/admin/keys/nope', { key: adminKey })).toEqual(
      badRequest(/^id: /),
    );
  });
});
