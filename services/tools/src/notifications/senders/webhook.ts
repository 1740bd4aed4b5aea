import { createHmac } from 'node:crypto';
import type { OutboundGuard } from '@jarvis/net-guard';
import { type ChannelSender, type Notification, SendError } from '../channel';
import { postThroughGuard } from './http-post';

export type WebhookSenderDeps = { guard: OutboundGuard; now?: () => number };

// Discord refuses a message's content over 2,000 characters.
const DISCORD_CONTENT_MAX = 2_000;

// POSTs the notification as JSON, signed: X-Jarvis-Timestamp (unix seconds) and
// X-Jarvis-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + raw body)>. The body is
// Jarvis's own {id, type, occurredAt, title, text} (the same id for the same event, so that a
// receiver drops duplicates), or Slack's {text} or Discord's {content} for their incoming hooks.
export function createWebhookSender(deps: WebhookSenderDeps): ChannelSender {
  const now = deps.now ?? Date.now;
  return {
    type: 'webhook',
    async send(channel, notification, signal) {
      const { config } = channel;
      const secret = channel.secrets.secret;
      if (config.type !== 'webhook' || !secret) {
        throw new SendError('the webhook channel has no secret to sign with', {
          isRetryable: false,
        });
      }
      const body = JSON.stringify(webhookBody(config.format, notification));
      const timestamp = String(Math.floor(now() / 1_000));
      await postThroughGuard(
        deps.guard,
        {
          url: new URL(config.url),
          headers: {
            'content-type': 'application/json',
            'x-jarvis-timestamp': timestamp,
            'x-jarvis-signature': signWebhook(secret, timestamp, body),
          },
          body,
          secrets: [secret],
        },
        signal,
      );
    },
  };
}

function signWebhook(secret: string, timestamp: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}

function webhookBody(format: 'jarvis' | 'slack' | 'discord', notification: Notification) {
  const { title, text, url } = notification;
  if (format === 'slack') {
    // Slack's mrkdwn: &, < and > are escaped, *...* is bold, <url|label> a link.
    const lines = [`*${escapeSlack(title)}*`, escapeSlack(text)];
    if (url) lines.push(`<${url}|Open in Jarvis>`);
    return { text: lines.filter(Boolean).join('\n') };
  }
  if (format === 'discord') {
    const link = url ? `\n${url}` : '';
    const content = `**${title}**\n${text}`;
    const room = DISCORD_CONTENT_MAX - link.length;
    return {
      content: `${content.length > room ? `${content.slice(0, room - 1)}…` : content}${link}`,
    };
  }
  return {
    id: notification.eventId,
    type: notification.kind,
    occurredAt: notification.occurredAt,
    title,
    text,
    ...(url ? { url } : {}),
    ...(notification.approvalId ? { approvalId: notification.approvalId } : {}),
  };
}

function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
