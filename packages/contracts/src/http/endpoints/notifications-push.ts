import {
  notificationsPushKey,
  notificationsPushSubscribe,
  notificationsPushSubscriptionsList,
  notificationsPushUnsubscribe,
  PushKeyResponse,
  PushSubscriptionBody,
  PushSubscriptionParams,
  PushSubscriptionResponse,
  PushSubscriptionsListResponse,
} from '../../notifications-push';
import { type Endpoint, json, type RequestParts } from '../endpoint';

const withUser = ({ userId, userTimeZone }: RequestParts) => ({ userId, userTimeZone });

// Web Push, per device: the web UI's Settings subscribes the browser it runs in.
export const NOTIFICATIONS_PUSH_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/notifications/push/key',
    summary: "The install's VAPID public key, to subscribe a browser with",
    description:
      'The applicationServerKey of pushManager.subscribe(), base64url. The key pair is made on the first start and kept (and backed up) in the database.',
    tag: 'notifications',
    auth: 'user',
    status: 200,
    response: json(PushKeyResponse),
    errors: ['timeout'],
    forward: { rpc: notificationsPushKey, toRequest: withUser },
  },
  {
    method: 'post',
    path: '/v1/notifications/push/subscriptions',
    summary: 'Subscribe a device (a browser) to Web Push',
    description:
      "The body is the browser's PushSubscription.toJSON() with a deviceName. The first device makes the webpush channel (with the default events; PUT /v1/notifications/channels/webpush changes them); the same endpoint again updates its keys. An endpoint that is not https, or on a private address the operator has not allowed, answers 400.",
    tag: 'notifications',
    auth: 'user',
    body: json(PushSubscriptionBody),
    status: 201,
    response: json(PushSubscriptionResponse),
    errors: ['timeout'],
    forward: {
      rpc: notificationsPushSubscribe,
      toRequest: (parts) => ({ ...withUser(parts), subscription: parts.body }),
    },
  },
  {
    method: 'get',
    path: '/v1/notifications/push/subscriptions',
    summary: 'Your devices subscribed to Web Push',
    description: "Each device's push service shows as its host only: the endpoint is not shown.",
    tag: 'notifications',
    auth: 'user',
    status: 200,
    response: json(PushSubscriptionsListResponse),
    errors: ['timeout'],
    forward: { rpc: notificationsPushSubscriptionsList, toRequest: withUser },
  },
  {
    method: 'delete',
    path: '/v1/notifications/push/subscriptions/{id}',
    summary: 'Unsubscribe a device',
    description: 'Removing the last device removes the webpush channel.',
    tag: 'notifications',
    auth: 'user',
    params: PushSubscriptionParams,
    status: 204,
    errors: ['not_found', 'timeout'],
    forward: {
      rpc: notificationsPushUnsubscribe,
      toRequest: (parts) => ({ ...withUser(parts), id: parts.params.id }),
    },
  },
];
