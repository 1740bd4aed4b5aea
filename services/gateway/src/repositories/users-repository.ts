import type { AdminUser, ApiKeyInfo, KeyScope } from '@jarvis/contracts';
import type { Pool, Queryable } from '@jarvis/db';

export type Principal = {
  userId: string;
  userName: string;
  // The user's stored IANA zone; null until one is set (then UTC applies).
  timeZone: string | null;
  keyId: string;
  scope: KeyScope;
};

export async function insertUser(db: Queryable, user: { id: string; name: string }): Promise<void> {
  await db.query('INSERT INTO gateway.users (id, name) VALUES ($1, $2)', [user.id, user.name]);
}

export async function insertApiKey(
  db: Queryable,
  key: {
    id: string;
    userId: string;
    name?: string | undefined;
    prefix: string;
    hash: string;
    scope: KeyScope;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO gateway.api_keys (id, user_id, name, prefix, key_hash, scope)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (key_hash) DO NOTHING`,
    [key.id, key.userId, key.name ?? null, key.prefix, key.hash, key.scope],
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

// Revoked keys too: a key is never issued twice, so a revoked one must not come back.
export async function findKeyState(
  db: Queryable,
  hash: string,
): Promise<{ scope: KeyScope; isRevoked: boolean } | undefined> {
  const { rows } = await db.query<{ scope: KeyScope; is_revoked: boolean }>(
    'SELECT scope, revoked_at IS NOT NULL AS is_revoked FROM gateway.api_keys WHERE key_hash = $1',
    [hash],
  );
  const row = rows[0];
  return row ? { scope: row.scope, isRevoked: row.is_revoked } : undefined;
}

export async function revokeOtherAdminKeys(db: Queryable, keepHash: string): Promise<void> {
  await db.query(
    `UPDATE gateway.api_keys SET revoked_at = now()
     WHERE scope = 'admin' AND key_hash <> $1 AND revoked_at IS NULL`,
    [keepHash],
  );
}

// The key's owner, and whether its "last used" is over a minute old (then worth a write).
export async function findPrincipalByKeyHash(
  db: Pool,
  hash: string,
): Promise<{ principal: Principal; isLastUseStale: boolean } | undefined> {
  const { rows } = await db.query<{
    user_id: string;
    name: string;
    time_zone: string | null;
    key_id: string;
    scope: KeyScope;
    is_last_use_stale: boolean;
  }>(
    `SELECT k.user_id, u.name, u.time_zone, k.id AS key_id, k.scope,
       coalesce(k.last_used_at < now() - interval '1 minute', true) AS is_last_use_stale
     FROM gateway.api_keys k JOIN gateway.users u ON u.id = k.user_id
     WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [hash],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    principal: {
      userId: row.user_id,
      userName: row.name,
      timeZone: row.time_zone,
      keyId: row.key_id,
      scope: row.scope,
    },
    isLastUseStale: row.is_last_use_stale,
  };
}

export async function updateUserTimeZone(
  db: Queryable,
  userId: string,
  timeZone: string,
): Promise<{ id: string; name: string; timeZone: string | null } | undefined> {
  const { rows } = await db.query<{ id: string; name: string; time_zone: string | null }>(
    'UPDATE gateway.users SET time_zone = $2 WHERE id = $1 RETURNING id, name, time_zone',
    [userId, timeZone],
  );
  const row = rows[0];
  return row && { id: row.id, name: row.name, timeZone: row.time_zone };
}

// Only while none is set, in the statement itself: of two chats naming zones at once, the first
// to write keeps it, and a zone the user set is never overwritten by a chat.
export async function setUserTimeZoneIfUnset(
  db: Queryable,
  userId: string,
  timeZone: string,
): Promise<void> {
  await db.query('UPDATE gateway.users SET time_zone = $2 WHERE id = $1 AND time_zone IS NULL', [
    userId,
    timeZone,
  ]);
}

// Guarded again here because requests that arrive together all see the old time: one of them
// writes, the others match no row.
export async function touchApiKey(db: Pool, keyId: string): Promise<void> {
  await db.query(
    `UPDATE gateway.api_keys SET last_used_at = now()
     WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [keyId],
  );
}

type ApiKeyRow = {
  id: string;
  name: string | null;
  prefix: string;
  scope: KeyScope;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
};

const API_KEY_COLUMNS = 'id, name, prefix, scope, created_at, last_used_at, revoked_at';

function toApiKeyInfo(row: ApiKeyRow): ApiKeyInfo {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scope: row.scope,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
  };
}

export async function listUserApiKeys(db: Queryable, userId: string): Promise<ApiKeyInfo[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${API_KEY_COLUMNS} FROM gateway.api_keys WHERE user_id = $1
     ORDER BY created_at DESC, id`,
    [userId],
  );
  return rows.map(toApiKeyInfo);
}

export async function findUserApiKey(
  db: Queryable,
  userId: string,
  keyId: string,
): Promise<ApiKeyInfo | undefined> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${API_KEY_COLUMNS} FROM gateway.api_keys WHERE id = $1 AND user_id = $2`,
    [keyId, userId],
  );
  return rows[0] && toApiKeyInfo(rows[0]);
}

// Holds the user's row until the transaction ends, so concurrent key creations count in turn.
export async function countActiveKeysForUpdate(db: Queryable, userId: string): Promise<number> {
  await db.query('SELECT 1 FROM gateway.users WHERE id = $1 FOR UPDATE', [userId]);
  const { rows } = await db.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM gateway.api_keys
     WHERE user_id = $1 AND revoked_at IS NULL`,
    [userId],
  );
  return rows[0]?.count ?? 0;
}

// not_found: no such key (of this user's); admin_key: an active admin key, left as it is.
export type RevokeOutcome = 'revoked' | 'not_found' | 'admin_key';

// An active admin key is left alone in the same statement, so no request can slip a revocation
// between a check and the update. Revoking twice keeps the first time.
async function revokeKeyUnlessAdmin(
  db: Queryable,
  keyFilter: string,
  params: string[],
): Promise<RevokeOutcome> {
  const { rows } = await db.query<{ is_active_admin: boolean }>(
    `WITH target AS (
       SELECT id, scope = 'admin' AND revoked_at IS NULL AS is_active_admin
       FROM gateway.api_keys WHERE ${keyFilter}
     ), revoked AS (
       UPDATE gateway.api_keys k SET revoked_at = coalesce(k.revoked_at, now())
       FROM target WHERE k.id = target.id AND NOT target.is_active_admin
     )
     SELECT is_active_admin FROM target`,
    params,
  );
  const row = rows[0];
  if (!row) return 'not_found';
  return row.is_active_admin ? 'admin_key' : 'revoked';
}

export function revokeUserApiKey(
  db: Queryable,
  userId: string,
  keyId: string,
): Promise<RevokeOutcome> {
  return revokeKeyUnlessAdmin(db, 'id = $1 AND user_id = $2', [keyId, userId]);
}

// Any user's key: for admin routes only.
export function revokeAnyApiKey(db: Queryable, keyId: string): Promise<RevokeOutcome> {
  return revokeKeyUnlessAdmin(db, 'id = $1', [keyId]);
}

export async function listUsersWithKeyCounts(db: Queryable): Promise<AdminUser[]> {
  const { rows } = await db.query<{
    id: string;
    name: string;
    created_at: Date;
    active_keys: number;
    revoked_keys: number;
  }>(
    `SELECT u.id, u.name, u.created_at,
       count(k.id) FILTER (WHERE k.revoked_at IS NULL)::int AS active_keys,
       count(k.id) FILTER (WHERE k.revoked_at IS NOT NULL)::int AS revoked_keys
     FROM gateway.users u LEFT JOIN gateway.api_keys k ON k.user_id = u.id
     GROUP BY u.id ORDER BY u.created_at, u.id`,
  );
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    createdAt: row.created_at.toISOString(),
    activeKeys: row.active_keys,
    revokedKeys: row.revoked_keys,
  }));
}
