import {
  ALERTS_PER_REQUEST_MAX,
  AlertsAcceptedResponse,
  GrafanaAlertsWebhook,
} from '../admin-alerts';
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
  {
    method: 'post',
    path: '/v1/admin/alerts',
    summary: "Tell the admin of Grafana's alerts, through their notification channels",
    description: `Grafana's contact point of type webhook posts here with the admin key (Authorization: Bearer). Each alert becomes an \`alert\` notification to the key's user, once per alert, start and status: a retry or a repeat of the same payload notifies nobody again. Fields Jarvis does not read are let through unchecked; at most ${ALERTS_PER_REQUEST_MAX} alerts per request.`,
    tag: 'admin',
    auth: 'admin',
    body: json(GrafanaAlertsWebhook),
    status: 202,
    response: json(AlertsAcceptedResponse),
    errors: ['unavailable'],
    handler: 'notifyAlerts',
  },
];
