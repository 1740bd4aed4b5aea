import { z } from 'zod';
import { Id } from '../common';

export const KeyScope = z.enum(['user', 'admin']);
export type KeyScope = z.infer<typeof KeyScope>;

// What the API shows of a key: never the key itself nor its hash, only the prefix that tells it
// apart from the user's other keys.
export const ApiKeyInfo = z.object({
  id: Id,
  name: z.string().nullable(),
  prefix: z.string(),
  scope: KeyScope,
  createdAt: z.iso.datetime({ offset: true }),
  // Updated at most once a minute.
  lastUsedAt: z.iso.datetime({ offset: true }).nullable(),
  revokedAt: z.iso.datetime({ offset: true }).nullable(),
});
export type ApiKeyInfo = z.infer<typeof ApiKeyInfo>;

// GET /v1/keys
export const ListApiKeysResponse = z.object({ keys: z.array(ApiKeyInfo) });
export type ListApiKeysResponse = z.infer<typeof ListApiKeysResponse>;

// POST /v1/keys
export const CreateApiKeyRequest = z.strictObject({
  name: z.string().trim().min(1, 'name must not be empty').max(100).optional(),
});
export type CreateApiKeyRequest = z.infer<typeof CreateApiKeyRequest>;

export const CreateApiKeyResponse = z.object({
  key: ApiKeyInfo,
  // Shown once: only its hash is stored.
  apiKey: z.string(),
});
export type CreateApiKeyResponse = z.infer<typeof CreateApiKeyResponse>;

// DELETE /v1/keys/{id} and DELETE /v1/admin/keys/{id}
export const ApiKeyIdParams = z.object({ id: Id });
export type ApiKeyIdParams = z.infer<typeof ApiKeyIdParams>;
