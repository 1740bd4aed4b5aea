import type { Pool, Queryable } from '@jarvis/db';

export type KeyScope = 'user' | 'admin';

export type Principal = { userId: string; userName: string; keyId: string; scope: KeyScope };

export async function insertUser(db: Queryable, user: { id: string; name: string }): Promise<void> {
  await db.query('INSERT INTO gateway.users (id, name) VALUES ($1, $2)', [user.id, user.name]);
}

export async function insertApiKey(
  db: Queryable,
  key: { id: string; userId: string; prefix: string; hash: string; scope: KeyScope },
): Promise<void> {
  await db.query(
    `INSERT INTO gateway.api_keys (id, user_id, prefix, key_hash, scope)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (key_hash) DO NOTHING`,
    [key.id, key.userId, key.prefix, key.hash, key.scope],
  );
}

export async function hasAdminKey(db: Queryable): Promise<boolean> {
  const { rows } = await db.query(
    "SELECT 1 FROM gateway.api_keys WHERE scope = 'admin' AND revoked_at IS NULL LIMIT 1",
  );
  return rows.length > 0;
}

export async function findAdminUserId(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ user_id: string }>(
    "SELECT user_id FROM gateway.api_keys WHERE scope = 'admin' ORDER BY created_at LIMIT 1",
  );
  return rows[0]?.user_id;
}

export async function findKeyScope(db: Queryable, hash: string): Promise<KeyScope | undefined> {
  const { rows } = await db.query<{ scope: KeyScope }>(
    'SELECT scope FROM gateway.api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hash],
  );
  return rows[0]?.scope;
}

export async function revokeOtherAdminKeys(db: Queryable, keepHash: string): Promise<void> {
  await db.query(
    `UPDATE gateway.api_keys SET revoked_at = now()
     WHERE scope = 'admin' AND key_hash <> $1 AND revoked_at IS NULL`,
    [keepHash],
  );
}

export async function findPrincipalByKeyHash(
  db: Pool,
  hash: string,
): Promise<Principal | undefined> {
  const { rows } = await db.query<{
    user_id: string;
    name: string;
    key_id: string;
    scope: KeyScope;
  }>(
    `SELECT k.user_id, u.name, k.id AS key_id, k.scope
     FROM gateway.api_keys k JOIN gateway.users u ON u.id = k.user_id
     WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [hash],
  );
  const row = rows[0];
  return row
    ? { userId: row.user_id, userName: row.name, keyId: row.key_id, scope: row.scope }
    : undefined;
}

// At most one write a minute per key: "last used" needs no finer grain than that.
export async function touchApiKey(db: Pool, keyId: string): Promise<void> {
  await db.query(
    `UPDATE gateway.api_keys SET last_used_at = now()
     WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [keyId],
  );
}
