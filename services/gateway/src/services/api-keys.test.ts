import { createHash } from 'node:crypto';
import { migrate } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import { startTestDatabase, type TestDatabase, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Principal } from '../repositories/users-repository';
import { authenticate, createUser, ensureAdminKey, requireScope } from './api-keys';

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'gateway',
    directory: new URL('../../migrations', import.meta.url),
  });
});

afterAll(async () => {
  await db?.stop();
});

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

async function catchHttpError(run: () => unknown): Promise<HttpError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  throw new Error('expected an HttpError');
}

async function countAdminKeys(): Promise<number> {
  const { rows } = await db.pool.query<{ count: string }>(
    "SELECT count(*) FROM gateway.api_keys WHERE scope = 'admin'",
  );
  return Number(rows[0]?.count);
}

describe('createUser', () => {
  it('returns a jv_ key that authenticates as the new user', async () => {
    const { user, apiKey } = await createUser(db.pool, 'alice');

    expect(apiKey).toMatch(/^jv_[A-Za-z0-9_-]{32}$/);
    const principal = await authenticate(db.pool, `Bearer ${apiKey}`);
    expect(principal).toEqual({
      userId: user.id,
      userName: 'alice',
      timeZone: null,
      keyId: expect.any(String),
      scope: 'user',
    });
  });

  it('stores only the hash of the key and a short visible prefix', async () => {
    const { user, apiKey } = await createUser(db.pool, 'bob');

    const { rows } = await db.pool.query<Record<string, unknown>>(
      'SELECT * FROM gateway.api_keys WHERE user_id = $1',
      [user.id],
    );

    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      key_hash: sha256(apiKey),
      prefix: apiKey.slice(0, 'jv_'.length + 8),
      scope: 'user',
      revoked_at: null,
    });
    expect(String(rows[0]?.prefix)).toHaveLength(11);
    expect(JSON.stringify(rows[0])).not.toContain(apiKey);
  });

  it('gives every user a different key', async () => {
    const first = await createUser(db.pool, 'twin');
    const second = await createUser(db.pool, 'twin');

    expect(second.user.id).not.toBe(first.user.id);
    expect(second.apiKey).not.toBe(first.apiKey);
  });
});

describe('authenticate', () => {
  it.each([
    ['a wrong key', 'Bearer jv_thisKeyWasNeverIssuedToAnyoneAtAll'],
    ['no header', undefined],
    ['a Basic header', 'Basic YWxpY2U6c2VjcmV0'],
    ['a Bearer header without a key', 'Bearer '],
  ])('answers 401 to %s', async (_label, header) => {
    const error = await catchHttpError(() => authenticate(db.pool, header));

    expect(error.status).toBe(401);
    expect(error.code).toBe('unauthorized');
  });

  it('takes the scheme in any case', async () => {
    const { user, apiKey } = await createUser(db.pool, 'carol');

    expect((await authenticate(db.pool, `bearer ${apiKey}`)).userId).toBe(user.id);
  });

  it('answers 401 to a revoked key', async () => {
    const { user, apiKey } = await createUser(db.pool, 'dave');
    await db.pool.query('UPDATE gateway.api_keys SET revoked_at = now() WHERE user_id = $1', [
      user.id,
    ]);

    const error = await catchHttpError(() => authenticate(db.pool, `Bearer ${apiKey}`));

    expect(error.status).toBe(401);
  });

  it('records when a key was last used', async () => {
    const { apiKey } = await createUser(db.pool, 'erin');

    await authenticate(db.pool, `Bearer ${apiKey}`);

    await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ last_used_at: Date | null }>(
          'SELECT last_used_at FROM gateway.api_keys WHERE key_hash = $1',
          [sha256(apiKey)],
        );
        return rows[0]?.last_used_at ?? undefined;
      },
      { what: 'last_used_at to be set' },
    );
  });

  it('writes "last used" at most once a minute', async () => {
    const { apiKey } = await createUser(db.pool, 'frida');
    const setLastUse = (interval: string) =>
      db.pool.query(
        `UPDATE gateway.api_keys SET last_used_at = now() - $2::interval WHERE key_hash = $1
         RETURNING last_used_at`,
        [sha256(apiKey), interval],
      );
    const lastUse = async () => {
      const { rows } = await db.pool.query<{ last_used_at: Date }>(
        'SELECT last_used_at FROM gateway.api_keys WHERE key_hash = $1',
        [sha256(apiKey)],
      );
      return rows[0]?.last_used_at.getTime();
    };

    const recent = (await setLastUse('30 seconds')).rows[0]?.last_used_at.getTime();
    await authenticate(db.pool, `Bearer ${apiKey}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await lastUse()).toBe(recent);

    const old = (await setLastUse('2 minutes')).rows[0]?.last_used_at.getTime() ?? 0;
    await authenticate(db.pool, `Bearer ${apiKey}`);
    await waitFor(async () => ((await lastUse()) ?? 0) > old || undefined, {
      what: 'last_used_at to move on',
    });
  });
});

describe('ensureAdminKey', () => {
  beforeEach(async () => {
    await db.pool.query('TRUNCATE gateway.api_keys, gateway.users');
  });

  it('generates an admin key on the first start only', async () => {
    const first = await ensureAdminKey(db.pool, undefined);
    const second = await ensureAdminKey(db.pool, undefined);

    expect(first.generatedKey).toMatch(/^jv_/);
    expect(second.generatedKey).toBeUndefined();
    expect(await countAdminKeys()).toBe(1);
    const principal = await authenticate(db.pool, `Bearer ${first.generatedKey}`);
    expect(principal.scope).toBe('admin');
    expect(principal.userName).toBe('admin');
  });

  it('creates one admin key when replicas start together', async () => {
    const results = await Promise.all([
      ensureAdminKey(db.pool, undefined),
      ensureAdminKey(db.pool, undefined),
      ensureAdminKey(db.pool, undefined),
    ]);

    expect(results.filter((result) => result.generatedKey !== undefined)).toHaveLength(1);
    expect(await countAdminKeys()).toBe(1);
  });

  it('registers a configured key once, returning nothing to print', async () => {
    const configured = 'configured-admin-key-0123456789abcdef';

    const first = await ensureAdminKey(db.pool, configured);
    const second = await ensureAdminKey(db.pool, configured);

    expect(first.generatedKey).toBeUndefined();
    expect(second.generatedKey).toBeUndefined();
    const { rows } = await db.pool.query('SELECT scope FROM gateway.api_keys WHERE key_hash = $1', [
      sha256(configured),
    ]);
    expect(rows).toEqual([{ scope: 'admin' }]);
    expect(await countAdminKeys()).toBe(1);
    const principal = await authenticate(db.pool, `Bearer ${configured}`);
    expect(principal.scope).toBe('admin');
    const { rows: admins } = await db.pool.query(
      "SELECT id FROM gateway.users WHERE name = 'admin'",
    );
    expect(admins).toHaveLength(1);
  });

  it('revokes the previous admin keys when JARVIS_ADMIN_KEY changes', async () => {
    const { generatedKey } = await ensureAdminKey(db.pool, undefined);
    const keyA = 'configured-admin-key-A-0123456789abcdef';
    const keyB = 'configured-admin-key-B-0123456789abcdef';
    await ensureAdminKey(db.pool, keyA);
    await ensureAdminKey(db.pool, keyB);

    for (const stale of [generatedKey, keyA]) {
      const error = await catchHttpError(() => authenticate(db.pool, `Bearer ${stale}`));
      expect(error.status).toBe(401);
    }
    expect((await authenticate(db.pool, `Bearer ${keyB}`)).scope).toBe('admin');
  });

  it('refuses a configured admin key that was revoked, rather than start without one', async () => {
    const configured = 'configured-admin-key-R-0123456789abcdef';
    await ensureAdminKey(db.pool, configured);
    await db.pool.query('UPDATE gateway.api_keys SET revoked_at = now() WHERE key_hash = $1', [
      sha256(configured),
    ]);

    await expect(ensureAdminKey(db.pool, configured)).rejects.toThrow(/was revoked/);
  });

  it("refuses a configured admin key that is already a user's key", async () => {
    const { apiKey } = await createUser(db.pool, 'mallory');
    await expect(ensureAdminKey(db.pool, apiKey)).rejects.toThrow(/already the API key of a user/);
    expect((await authenticate(db.pool, `Bearer ${apiKey}`)).scope).toBe('user');
  });
});

describe('requireScope', () => {
  const user: Principal = {
    userId: 'u',
    userName: 'alice',
    timeZone: null,
    keyId: 'k1',
    scope: 'user',
  };
  const admin: Principal = {
    userId: 'a',
    userName: 'admin',
    timeZone: null,
    keyId: 'k2',
    scope: 'admin',
  };

  it('answers 403 to a user key on an admin route', async () => {
    const error = await catchHttpError(() => requireScope(user, 'admin'));

    expect(error.status).toBe(403);
    expect(error.code).toBe('forbidden');
  });

  it('lets an admin key through to admin routes and any key through to user routes', () => {
    expect(() => requireScope(admin, 'admin')).not.toThrow();
    expect(() => requireScope(user, 'user')).not.toThrow();
    expect(() => requireScope(admin, 'user')).not.toThrow();
  });
});
