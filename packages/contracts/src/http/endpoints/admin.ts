import { CreateUserRequest, CreateUserResponse, ListUsersResponse } from '../admin-users';
import { ApiKeyIdParams } from '../api-keys';
import { type Endpoint, json } from '../endpoint';

export const ADMIN_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/admin/users',
    summary: 'Every user, with key counts',
    tag: 'admin',
    auth: 'admin',
    status: 200,
    response: json(ListUsersResponse),
    handler: 'listUsers',
  },
  {
    method: 'post',
    path: '/v1/admin/users',
    summary: 'Create a user; its key is shown only this once',
    tag: 'admin',
    auth: 'admin',
    body: json(CreateUserRequest),
    status: 201,
    response: json(CreateUserResponse),
    handler: 'createUser',
  },
  {
    method: 'delete',
    path: '/v1/admin/keys/{id}',
    summary: "Revoke any user's key",
    tag: 'admin',
    auth: 'admin',
    params: ApiKeyIdParams,
    status: 204,
    // conflict: the key is the admin key, which is rotated through JARVIS_ADMIN_KEY.
    errors: ['not_found', 'conflict'],
    handler: 'revokeAnyKey',
  },
];
