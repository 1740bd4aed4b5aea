import type { ChannelType, NotificationKind, WebhookFormat } from '@jarvis/contracts';
import type { z } from 'zod';

// The shapes every part of notifications shares: a stored channel with its secrets opened, what
// one delivery sends, and the sender each channel type has.

export type SmtpConfig = {
  host: string;
  port: number;
  security: 'tls' | 'starttls' | 'none';
  user?: string;
  from?: string;
};

// tools.notification_channels.config, by type.
export type ChannelConfig =
  | { type: 'ntfy'; url: string; topic: string; priority: number; clickUrl?: string }
  | { type: 'webhook'; url: string; format: z.infer<typeof WebhookFormat> }
  | { type: 'email'; to: string; smtp?: SmtpConfig }
  | { type: 'telegram'; chatId: string; username: string | null }
  // Its devices are rows of tools.push_subscriptions.
  | { type: 'webpush' };

// The sealed secrets, opened: only the fields of the channel's type are present.
export type ChannelSecrets = { token?: string; secret?: string; smtpPassword?: string };

export type StoredChannel = {
  userId: string;
  type: ChannelType;
  config: ChannelConfig;
  secrets: ChannelSecrets;
  events: NotificationKind[];
  isConfirmed: boolean;
  updatedAt: Date;
};

// What one delivery sends: the same on every channel of an event.
export type Notification = {
  // The event's id: a webhook's `id`, so that receivers drop duplicates.
  eventId: string;
  kind: NotificationKind;
  occurredAt: string;
  title: string;
  text: string;
  // Where the UI shows the thing (a conversation, an approval), when the install's public URL is
  // known.
  url?: string;
  // That place as the web UI's own path (/approvals): Web Push opens it on the origin the
  // browser subscribed from, which needs no public URL.
  path?: string;
  // approval_request: Telegram's Approve and Deny buttons decide it.
  approvalId?: string;
  // A mission's question: a reply to Telegram's message answers it.
  question?: MissionQuestionRef;
};

export type MissionQuestionRef = { missionId: string; questionId: string };

// A send that failed. Retryable: a timeout, a 429 (retryAfterMs from Retry-After), a 5xx, a
// connection that failed; the rest (a 4xx, a refused login, a private address) is final.
export class SendError extends Error {
  readonly isRetryable: boolean;
  readonly retryAfterMs: number | undefined;

  constructor(reason: string, options: { isRetryable: boolean; retryAfterMs?: number }) {
    super(reason);
    this.name = 'SendError';
    this.isRetryable = options.isRetryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

// Sends one notification to one channel, or throws SendError. The message must never carry a
// secret: it is stored as the delivery's error and shown in the history.
export type ChannelSender = {
  type: ChannelType;
  send(channel: StoredChannel, notification: Notification, signal: AbortSignal): Promise<void>;
};

// Seals secrets with the install's key (AES-256-GCM); the database keeps only what this seals.
export type SecretBox = {
  seal(secrets: ChannelSecrets): Buffer;
  open(sealed: Buffer): ChannelSecrets;
};
