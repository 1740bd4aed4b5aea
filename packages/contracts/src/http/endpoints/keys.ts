import {
  ApiKeyIdParams,
  CreateApiKeyRequest,
  CreateApiKeyResponse,
  ListApiKeysResponse,
} from '../api-keys';
import { type Endpoint, json } from '../endpoint';

export const KEYS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/keys',
    summary: 'Your API keys (prefixes, never the keys)',
    tag: 'keys',
    auth: 'user',
    status: 200,
    response: json(ListApiKeysResponse),
    handler: 'listKeys',
  },
  {
    method: 'post',
    path: '/v1/keys',
    summary: 'Create another key for yourself; it is shown only this once',
    tag: 'keys',
    auth: 'user',
    body: json(CreateApiKeyRequest),
    isBodyOptional: true,
    status: 201,
    response: json(CreateApiKeyResponse),
    handler: 'createKey',
  },
  {
    method: 'delete',
    path: '/v1/keys/{id}',
    summary: 'Revoke one of your keys',
    tag: 'keys',
    auth: 'user',
    params: ApiKeyIdParams,
    status: 204,
    // conflict: the key is the admin key, which is rotated through JARVIS_ADMIN_KEY.
    errors: ['not_found', 'conflict'],
    handler: 'revokeKey',
  },
];
