import { z } from 'zod';
import { Id, Timestamp, TimeZone } from './common';
import { defineRpc } from './define';

// Notifications: what reaches the user outside the browser. The tools service owns the channels
// (ntfy, email, webhook, Telegram, Web Push), their settings and the history of deliveries; the gateway
// forwards /v1/notifications/* to these contracts.

export const ChannelType = z.enum(['ntfy', 'email', 'webhook', 'telegram', 'webpush']);
export type ChannelType = z.infer<typeof ChannelType>;

// What a delivery is about. A channel subscribes to kinds; `test` always goes through.
// - reminder: a reminder fired (its text);
// - scheduled_result: scheduled agent work (a prompt) finished, with its reply;
// - scheduled_failure: an occurrence failed, was skipped or missed, or its turn failed;
// - mission_report: a mission ended, with its report;
// - approval_request: a run waits for the user's decision;
// - note: the agent's `notify` tool;
// - alert: an operations alert from the install's Grafana, firing or resolved (only the admin,
//   whose key Grafana posts with, gets these);
// - test: POST /v1/notifications/test.
export const NotificationKind = z.enum([
  'reminder',
  'scheduled_result',
  'scheduled_failure',
  'mission_report',
  'approval_request',
  'note',
  'alert',
  'test',
]);
export type NotificationKind = z.infer<typeof NotificationKind>;

// What a channel gets when its PUT names no `events`. Alerts too: only the admin is ever sent
// any, and an admin who set up a channel wants to hear that a service is down.
export const DEFAULT_CHANNEL_EVENTS: NotificationKind[] = [
  'reminder',
  'scheduled_result',
  'scheduled_failure',
  'mission_report',
  'approval_request',
  'note',
  'alert',
];

// Sent through quiet hours: the user set the reminder's time, and a run waits on the approval.
// Everything else (a note not marked urgent, an alert that resolved) is held until quiet hours
// end; a firing alert goes through, as the tools service decides per notification.
export const URGENT_KINDS: NotificationKind[] = ['reminder', 'approval_request', 'test'];

// What the API shows in place of a stored secret: never the secret, nor a part of it.
export const SECRET_MASK = '********';
const Mask = z.literal(SECRET_MASK);

const HttpUrl = z.url({ protocol: /^https?$/ }).max(2_048);
const Secret = z.string().min(1).max(512);
const ChannelEvents = z
  .array(NotificationKind.exclude(['test']))
  .max(16)
  .transform((kinds) => [...new Set(kinds)]);

// ntfy: POSTs to `<url>/<topic>`.
const NtfyFields = {
  url: HttpUrl,
  topic: z.string().regex(/^[-_A-Za-z0-9]{1,64}$/, 'letters, digits, - and _, at most 64'),
  priority: z.number().int().min(1).max(5).default(3),
  clickUrl: HttpUrl.optional(),
};

// A signed POST: Jarvis's own body {id, type, occurredAt, title, text}, or Slack's {text} or
// Discord's {content}, for their incoming webhooks.
export const WebhookFormat = z.enum(['jarvis', 'slack', 'discord']);
const WebhookFields = { url: HttpUrl, format: WebhookFormat.default('jarvis') };

export const SmtpSecurity = z.enum(['tls', 'starttls', 'none']);
const SmtpFields = {
  host: z.string().min(1).max(253),
  port: z.number().int().min(1).max(65_535),
  // tls: TLS from the first byte (465); starttls: upgrade, required (587); none: plain.
  security: SmtpSecurity.default('starttls'),
  user: z.string().min(1).max(256).optional(),
  from: z.email().max(254).optional(),
};

// PUT /v1/notifications/channels/{type}: one body for every type (the path names it), checked
// per type by the tools service, which names the field that is wrong. A secret left out of a PUT
// keeps the stored one.
export const ChannelSettingsBody = z.strictObject({
  url: HttpUrl.optional(),
  topic: NtfyFields.topic.optional(),
  token: Secret.optional(),
  priority: z.number().int().min(1).max(5).optional(),
  clickUrl: HttpUrl.optional(),
  secret: Secret.optional(),
  format: WebhookFormat.optional(),
  to: z.email().max(254).optional(),
  smtp: z.strictObject({ ...SmtpFields, password: Secret.optional() }).optional(),
  events: ChannelEvents.optional(),
});

export const ChannelSettings = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('ntfy'),
    ...NtfyFields,
    token: Secret.optional(),
    events: ChannelEvents.optional(),
  }),
  z.strictObject({
    type: z.literal('webhook'),
    ...WebhookFields,
    secret: z.string().min(16, 'at least 16 characters').max(512).optional(),
    events: ChannelEvents.optional(),
  }),
  z.strictObject({
    type: z.literal('email'),
    to: z.email().max(254),
    // Absent: the install's SMTP (SMTP_* settings), which sends only to confirmed addresses.
    smtp: z.strictObject({ ...SmtpFields, password: Secret.optional() }).optional(),
    events: ChannelEvents.optional(),
  }),
  // Only what it gets: its devices subscribe through /v1/notifications/push/subscriptions, and
  // the first one makes the channel.
  z.strictObject({ type: z.literal('webpush'), events: ChannelEvents.optional() }),
]);
export type ChannelSettings = z.infer<typeof ChannelSettings>;

// A channel as the API shows it: secrets masked.
export const Channel = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('ntfy'),
    ...NtfyFields,
    token: Mask.optional(),
    events: z.array(NotificationKind),
    updatedAt: Timestamp,
  }),
  z.object({
    type: z.literal('webhook'),
    ...WebhookFields,
    secret: Mask,
    events: z.array(NotificationKind),
    updatedAt: Timestamp,
  }),
  z.object({
    type: z.literal('email'),
    to: z.email(),
    smtp: z.object({ ...SmtpFields, password: Mask.optional() }).optional(),
    // With the install's SMTP, nothing is sent until the address is confirmed with the code
    // mailed to it (POST /v1/notifications/channels/email/confirm).
    isConfirmed: z.boolean(),
    events: z.array(NotificationKind),
    updatedAt: Timestamp,
  }),
  z.object({
    type: z.literal('telegram'),
    // The linked private chat's user, as Telegram names them.
    username: z.string().nullable(),
    events: z.array(NotificationKind),
    updatedAt: Timestamp,
  }),
  z.object({
    type: z.literal('webpush'),
    // The browsers subscribed (GET /v1/notifications/push/subscriptions lists them).
    devices: z.number().int().nonnegative(),
    events: z.array(NotificationKind),
    updatedAt: Timestamp,
  }),
]);
export type Channel = z.infer<typeof Channel>;

export const DeliveryStatus = z.enum(['queued', 'held', 'retrying', 'sent', 'failed']);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

export const Delivery = z.object({
  id: Id,
  // The event it tells of: the same id on every channel, and in a webhook's body.
  eventId: z.string(),
  kind: NotificationKind,
  channel: ChannelType,
  status: DeliveryStatus,
  title: z.string(),
  attempts: z.number().int().nonnegative(),
  createdAt: Timestamp,
  sentAt: Timestamp.nullable(),
  // held or retrying: when the next attempt is due.
  nextAttemptAt: Timestamp.nullable(),
  // failed, or the last attempt's failure while retrying: why, without secrets.
  error: z.string().nullable(),
});
export type Delivery = z.infer<typeof Delivery>;

// Quiet hours, as wall-clock times in the user's zone; start after end spans midnight.
const WallTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM, 24-hour');
export const QuietHours = z.strictObject({ start: WallTime, end: WallTime });
export type QuietHours = z.infer<typeof QuietHours>;
export const NotificationSettings = z.object({
  quietHours: QuietHours.nullable(),
  // The zone quiet hours are read in: the user's, as the gateway last told it.
  timeZone: TimeZone,
});
export type NotificationSettings = z.infer<typeof NotificationSettings>;

// Every request carries the user's zone as the gateway knows it, so that the tools service keeps
// the latest one for quiet hours and for turns that come in by Telegram.
const userShape = { userId: Id, userTimeZone: TimeZone.default('UTC') };

export const ChannelsListRequest = z.object(userShape);
export const ChannelsListResponse = z.object({ channels: z.array(Channel) });
export type ChannelsListResponse = z.infer<typeof ChannelsListResponse>;
export const notificationsChannelsList = defineRpc(
  'notifications.channels.list',
  ChannelsListRequest,
  ChannelsListResponse,
);

// bad_request names the field: an invalid URL, a destination on a private address, an SMTP
// server that cannot be reached, a missing secret on a new webhook. PUT of email with the
// install's SMTP mails a confirmation code to `to`.
export const ChannelsPutRequest = z.object({ ...userShape, channel: ChannelSettings });
export const ChannelResponse = z.object({ channel: Channel });
export type ChannelResponse = z.infer<typeof ChannelResponse>;
export const notificationsChannelsPut = defineRpc(
  'notifications.channels.put',
  ChannelsPutRequest,
  ChannelResponse,
);

// Telegram's delete unlinks the chat. not_found: no such channel.
export const ChannelsDeleteRequest = z.object({ ...userShape, type: ChannelType });
export const notificationsChannelsDelete = defineRpc(
  'notifications.channels.delete',
  ChannelsDeleteRequest,
  z.object({}),
);

// bad_request: a wrong or expired code (attempts are limited).
export const EmailConfirmRequest = z.object({
  ...userShape,
  code: z.string().regex(/^\d{6}$/, 'the six digits mailed to you'),
});
export const notificationsEmailConfirm = defineRpc(
  'notifications.email.confirm',
  EmailConfirmRequest,
  ChannelResponse,
);

// Sends a test now and answers once it was sent or failed (failed with the reason, such as an
// SMTP server that refused the login). not_found: no such channel.
export const TestRequest = z.object({ ...userShape, channel: ChannelType });
export const TestResponse = z.object({
  delivery: z.object({
    id: Id,
    channel: ChannelType,
    status: DeliveryStatus,
    error: z.string().nullable(),
  }),
});
export type TestResponse = z.infer<typeof TestResponse>;
export const notificationsTest = defineRpc('notifications.test', TestRequest, TestResponse);

export const DELIVERIES_MAX_LIMIT = 200;
export const DeliveriesListRequest = z.object({
  ...userShape,
  channel: ChannelType.optional(),
  // Cursor: only deliveries created before this instant (the previous page's nextBefore).
  before: Timestamp.optional(),
  limit: z.number().int().min(1).max(DELIVERIES_MAX_LIMIT).default(50),
});
export const DeliveriesListResponse = z.object({
  deliveries: z.array(Delivery),
  nextBefore: Timestamp.optional(),
});
export type DeliveriesListResponse = z.infer<typeof DeliveriesListResponse>;
export const notificationsDeliveriesList = defineRpc(
  'notifications.deliveries.list',
  DeliveriesListRequest,
  DeliveriesListResponse,
);

export const SettingsGetRequest = z.object(userShape);
export const SettingsResponse = z.object({ settings: NotificationSettings });
export type SettingsResponse = z.infer<typeof SettingsResponse>;
export const notificationsSettingsGet = defineRpc(
  'notifications.settings.get',
  SettingsGetRequest,
  SettingsResponse,
);
export const SettingsPutRequest = z.object({ ...userShape, quietHours: QuietHours.nullable() });
export const notificationsSettingsPut = defineRpc(
  'notifications.settings.put',
  SettingsPutRequest,
  SettingsResponse,
);

// A single-use code the user sends to the install's bot as `/start CODE` from a private chat.
// unavailable: the install has no bot (TELEGRAM_BOT_TOKEN), or Telegram rejected its token.
export const TelegramLinkRequest = z.object(userShape);
export const TelegramLinkResponse = z.object({
  code: z.string(),
  expiresAt: Timestamp,
  // t.me/<bot>?start=<code>: opens the chat with the code filled in.
  url: z.string().nullable(),
});
export type TelegramLinkResponse = z.infer<typeof TelegramLinkResponse>;
export const notificationsTelegramLink = defineRpc(
  'notifications.telegram.link',
  TelegramLinkRequest,
  TelegramLinkResponse,
);

// HTTP shapes.
export const ChannelTypeParams = z.strictObject({ type: ChannelType });
export const ChannelSettingsTypeParams = z.strictObject({
  type: ChannelType.exclude(['telegram']),
});
export const TestBody = z.strictObject({ channel: ChannelType });
export const EmailConfirmBody = z.strictObject({ code: EmailConfirmRequest.shape.code });
export const SettingsBody = z.strictObject({ quietHours: QuietHours.nullable() });
export const DeliveriesListQuery = z.strictObject({
  channel: ChannelType.optional(),
  before: Timestamp.optional(),
  limit: z.coerce.number().int().min(1).max(DELIVERIES_MAX_LIMIT).optional(),
});
