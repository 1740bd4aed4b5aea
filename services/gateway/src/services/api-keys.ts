import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type {
  AdminUser,
  ApiKeyInfo,
  CreateApiKeyResponse,
  CreateUserResponse,
  KeyScope,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import {
  countActiveKeysForUpdate,
  findAdminUserId,
  findKeyState,
  findPrincipalByKeyHash,
  findUserApiKey,
  hasAdminKey,
  insertApiKey,
  insertUser,
  listUserApiKeys,
  listUsersWithKeyCounts,
  type Principal,
  type RevokeOutcome,
  revokeAnyApiKey,
  revokeOtherAdminKeys,
  revokeUserApiKey,
  touchApiKey,
} from '../repositories/users-repository';

const KEY_PREFIX = 'jv_';
const KEY_RANDOM_BYTES = 24;
// A key as generateApiKey writes it (base64url has 4 characters per 3 bytes), anywhere in a text.
const API_KEY_PATTERN = new RegExp(`${KEY_PREFIX}[A-Za-z0-9_-]{${(KEY_RANDOM_BYTES * 4) / 3}}`);
const VISIBLE_CHARS = 8;
// Far more than one person's devices and scripts; keeps a leaked key from minting keys forever.
export const MAX_ACTIVE_KEYS_PER_USER = 100;

function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

function generateApiKey(): string {
  return `${KEY_PREFIX}${randomBytes(KEY_RANDOM_BYTES).toString('base64url')}`;
}

export function containsApiKey(text: string): boolean {
  return API_KEY_PATTERN.test(text);
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
    const existing = await findKeyState(db, hash);
    if (existing?.scope === 'user') {
      throw new Error('JARVIS_ADMIN_KEY is already the API key of a user; choose another');
    }
    // Registering it again would do nothing (the hash is taken) and leave no working admin key.
    if (existing?.isRevoked) throw new Error('JARVIS_ADMIN_KEY was revoked; choose another');
    if (!existing) {
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

const BEARER_HINT = 'send "Authorization: Bearer <key>"';

// The key of an "Authorization: Bearer <key>" header. A header of any other shape is named as
// such: a client that sent something needs to know it was not understood, not that it is missing.
function bearerKey(authorization: string | undefined): string {
  if (!authorization?.trim())
    throw new HttpError('unauthorized', `missing API key: ${BEARER_HINT}`);
  const key = authorization.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!key) throw new HttpError('unauthorized', `malformed Authorization header: ${BEARER_HINT}`);
  return key;
}

// Keys travel only in the Authorization header, never in URLs (they would end up in logs).
// Looked up on every request, so a revoked key stops working at once, on every replica.
export async function authenticate(
  pool: Pool,
  authorization: string | undefined,
): Promise<Principal> {
  const found = await findPrincipalByKeyHash(pool, hashApiKey(bearerKey(authorization)));
  if (!found) throw new HttpError('unauthorized', 'invalid or revoked API key');
  // "Last used" is written at most once a minute per key, off the request's path: a busy key
  // would otherwise cost a row update per request.
  if (found.isLastUseStale) void touchApiKey(pool, found.principal.keyId).catch(() => {});
  return found.principal;
}

export function requireScope(principal: Principal, scope: KeyScope): void {
  if (scope === 'admin' && principal.scope !== 'admin') {
    throw new HttpError('forbidden', 'this route needs an admin key');
  }
}

// A further key for the key's own user. Always of scope user: admin keys come only from
// JARVIS_ADMIN_KEY (or the first start), so a leaked admin key cannot make more of itself.
export async function createApiKey(
  pool: Pool,
  principal: Principal,
  name: string | undefined,
): Promise<CreateApiKeyResponse> {
  const apiKey = generateApiKey();
  const id = randomUUID();
  const key = await withTransaction(pool, async (db) => {
    if ((await countActiveKeysForUpdate(db, principal.userId)) >= MAX_ACTIVE_KEYS_PER_USER) {
      throw new HttpError(
        'conflict',
        `a user may have at most ${MAX_ACTIVE_KEYS_PER_USER} active keys: revoke one first`,
      );
    }
    await insertApiKey(db, {
      id,
      userId: principal.userId,
      name,
      prefix: visiblePrefix(apiKey),
      hash: hashApiKey(apiKey),
      scope: 'user',
    });
    return findUserApiKey(db, principal.userId, id);
  });
  if (!key) throw new Error(`api key ${id} vanished right after it was created`);
  return { key, apiKey };
}

export function listApiKeys(pool: Pool, principal: Principal): Promise<ApiKeyInfo[]> {
  return listUserApiKeys(pool, principal.userId);
}

// The admin key is the environment's (JARVIS_ADMIN_KEY, or the one printed on the first start):
// revoked through the API, it would leave the install without one, and a gateway configured
// with it would refuse to start.
function settleRevocation(outcome: RevokeOutcome): void {
  // Another user's key answers like a missing one: its id says nothing about who owns it.
  if (outcome === 'not_found') throw new HttpError('not_found', 'API key not found');
  if (outcome === 'admin_key') {
    throw new HttpError(
      'conflict',
      'the admin key cannot be revoked through the API: rotate it by setting a new JARVIS_ADMIN_KEY in the environment and restarting the gateway, which revokes the old one',
    );
  }
}

export async function revokeApiKey(pool: Pool, principal: Principal, keyId: string): Promise<void> {
  settleRevocation(await revokeUserApiKey(pool, principal.userId, keyId));
}

export async function revokeAnyUsersApiKey(pool: Pool, keyId: string): Promise<void> {
  settleRevocation(await revokeAnyApiKey(pool, keyId));
}

export function listUsers(pool: Pool): Promise<AdminUser[]> {
  return listUsersWithKeyCounts(pool);
}
