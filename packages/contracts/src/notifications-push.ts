import { z } from 'zod';
import { Id, Timestamp, TimeZone } from './common';
import { defineRpc } from './define';

// Web Push: the browsers (devices) a user subscribed, and the install's VAPID public key they
// subscribe with. The tools service owns both; a `webpush` delivery goes to every device of the
// user. The gateway forwards /v1/notifications/push/* to these contracts.

const userShape = { userId: Id, userTimeZone: TimeZone.default('UTC') };

// base64url without padding, as PushSubscription.toJSON() gives the keys.
const Base64Url = z.string().regex(/^[A-Za-z0-9_-]+$/, 'base64url without padding');

// POST /v1/notifications/push/subscriptions: the browser's PushSubscription.toJSON() as it is
// (its expirationTime is accepted and not kept: push services hardly set it, and a subscription
// that lapses answers 404/410, which removes it), with a name for the device.
export const PushSubscriptionBody = z.strictObject({
  // The push service's URL: an outbound destination, refused when it is not https or names a
  // private address the operator has not allowed.
  endpoint: z.url({ protocol: /^https$/ }).max(2_048),
  expirationTime: z.number().nullable().optional(),
  keys: z.strictObject({
    // The browser's P-256 public key, uncompressed (65 bytes: 87 characters).
    p256dh: Base64Url.length(87, 'a P-256 public key, uncompressed (87 characters)'),
    // The 16-byte authentication secret (22 characters).
    auth: Base64Url.length(22, '16 bytes (22 characters)'),
  }),
  deviceName: z.string().trim().min(1).max(100).optional(),
});
export type PushSubscriptionBody = z.infer<typeof PushSubscriptionBody>;

// A device as the API shows it: never its endpoint (a capability: whoever holds it with the
// keys can push to the device), only the push service's host.
export const PushSubscriptionView = z.object({
  id: Id,
  deviceName: z.string().nullable(),
  // fcm.googleapis.com, updates.push.services.mozilla.com, web.push.apple.com…
  endpointHost: z.string(),
  createdAt: Timestamp,
  // The last push the service accepted for this device; null: none yet.
  lastSuccessAt: Timestamp.nullable(),
});
export type PushSubscriptionView = z.infer<typeof PushSubscriptionView>;

export const PushKeyRequest = z.object(userShape);
export const PushKeyResponse = z.object({
  // The VAPID public key, base64url (65 bytes uncompressed P-256): the applicationServerKey of
  // pushManager.subscribe().
  publicKey: z.string(),
});
export type PushKeyResponse = z.infer<typeof PushKeyResponse>;
export const notificationsPushKey = defineRpc(
  'notifications.push.key',
  PushKeyRequest,
  PushKeyResponse,
);

// Subscribing the same endpoint again (the browser's subscription after a reload) updates its
// keys and name: one device, one row. bad_request names the field: an endpoint on a private
// address, or one that cannot be resolved.
export const PushSubscribeRequest = z.object({ ...userShape, subscription: PushSubscriptionBody });
export const PushSubscriptionResponse = z.object({ subscription: PushSubscriptionView });
export type PushSubscriptionResponse = z.infer<typeof PushSubscriptionResponse>;
export const notificationsPushSubscribe = defineRpc(
  'notifications.push.subscribe',
  PushSubscribeRequest,
  PushSubscriptionResponse,
);

export const PushSubscriptionsListRequest = z.object(userShape);
export const PushSubscriptionsListResponse = z.object({
  subscriptions: z.array(PushSubscriptionView),
});
export type PushSubscriptionsListResponse = z.infer<typeof PushSubscriptionsListResponse>;
export const notificationsPushSubscriptionsList = defineRpc(
  'notifications.push.subscriptions.list',
  PushSubscriptionsListRequest,
  PushSubscriptionsListResponse,
);

// not_found: no such device of this user. Removing the last device removes the webpush channel.
export const PushUnsubscribeRequest = z.object({ ...userShape, id: Id });
export const notificationsPushUnsubscribe = defineRpc(
  'notifications.push.unsubscribe',
  PushUnsubscribeRequest,
  z.object({}),
);

// HTTP shapes.
export const PushSubscriptionParams = z.strictObject({ id: Id });

// What a device's service worker receives, as the JSON text of the push message: shown with
// showNotification(title, {body, tag, data: {url}}). `url` is a path of the web UI (same origin:
// the worker opens nothing else); `tag` is the event's, so that a notification sent again (a
// retried delivery) replaces the one shown rather than adding a second.
export const WebPushPayload = z.object({
  title: z.string(),
  body: z.string(),
  url: z.string().startsWith('/'),
  tag: z.string(),
});
export type WebPushPayload = z.infer<typeof WebPushPayload>;
