import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { CreateUserResponse } from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import {
  findAdminUserId,
  findKeyScope,
  findPrincipalByKeyHash,
  hasAdminKey,
  insertApiKey,
  insertUser,
  type KeyScope,
  type Principal,
  revokeOtherAdminKeys,
  touchApiKey,
} from '../repositories/users-repository';

const KEY_PREFIX = 'jv_';
const VISIBLE_CHARS = 8;

function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(24).toString('base64url')}`;
}

function visiblePrefix(key: string): string {
  return key.slice(0, KEY_PREFIX.length + VISIBLE_CHARS);
}

export async function createUser(pool: Pool, name: string): Promise<CreateUserResponse> {
  const userId = randomUUID();
  const apiKey = generateApiKey();
  await withTransaction(pool, async (db) => {
    await insertUser(db, { id: userId, name });
    await insertApiKey(db, {
      id: randomUUID(),
      userId,
      prefix: visiblePrefix(apiKey),
      hash: hashApiKey(apiKey),
      scope: 'user',
    });
  });
  return { user: { id: userId, name }, apiKey };
}

// Makes sure an admin key exists. A configured key is registered (idempotently); otherwise a
// key is generated on the very first start only, and returned so the caller can print it once.
export async function ensureAdminKey(
  pool: Pool,
  configuredKey: string | undefined,
): Promise<{ generatedKey: string | undefined }> {
  return withTransaction(pool, async (db) => {
    // Replicas starting together must not each create an admin.
    await db.query("SELECT pg_advisory_xact_lock(hashtext('gateway:admin-key'))");
    if (!configuredKey && (await hasAdminKey(db))) return { generatedKey: undefined };
    const key = configuredKey ?? generateApiKey();
    let adminId = await findAdminUserId(db);
    if (!adminId) {
      adminId = randomUUID();
      await insertUser(db, { id: adminId, name: 'admin' });
    }
    const hash = hashApiKey(key);
    const existingScope = await findKeyScope(db, hash);
    if (existingScope === 'user') {
      throw new Error('JARVIS_ADMIN_KEY is already the API key of a user; choose another');
    }
    if (!existingScope) {
      await insertApiKey(db, {
        id: randomUUID(),
        userId: adminId,
        prefix: visiblePrefix(key),
        hash,
        scope: 'admin',
      });
    }
    // Changing JARVIS_ADMIN_KEY is how a leaked admin key is replaced: the old ones stop working.
    if (configuredKey) await revokeOtherAdminKeys(db, hash);
    return { generatedKey: configuredKey ? undefined : key };
  });
}

// Keys travel only in the Authorization header, never in URLs (they would end up in logs).
export async function authenticate(
  pool: Pool,
  authorization: string | undefined,
): Promise<Principal> {
  const match = authorization?.match(/^Bearer\s+(\S+)\s*$/i);
  const key = match?.[1];
  if (!key) {
    throw new HttpError('unauthorized', 'missing API key: send "Authorization: Bearer <key>"');
  }
  const principal = await findPrincipalByKeyHash(pool, hashApiKey(key));
  if (!principal) throw new HttpError('unauthorized', 'invalid or revoked API key');
  void touchApiKey(pool, principal.keyId).catch(() => {});
  return principal;
}

export function requireScope(principal: Principal, scope: KeyScope): void {
  if (scope === 'admin' && principal.scope !== 'admin') {
    throw new HttpError('forbidden', 'this route needs an admin key');
  }
}
