import type { OutboundGuard } from '@jarvis/net-guard';
import { type ChannelSender, type Notification, SendError } from '../channel';
import { type SmtpServer, sendMail } from '../email-transport';

export type EmailSenderDeps = {
  guard: OutboundGuard;
  // The install's SMTP server (SMTP_*), for channels that bring none of their own.
  installSmtp: SmtpServer | undefined;
  // How long connecting, the greeting and each step may take.
  timeoutMs: number;
};

// Mails the notification as plain text: the title as the subject, the text, and the link.
export function createEmailSender(deps: EmailSenderDeps): ChannelSender {
  return {
    type: 'email',
    async send(channel, notification, signal) {
      const { config } = channel;
      if (config.type !== 'email') {
        throw new SendError('not an email channel', { isRetryable: false });
      }
      const server = config.smtp
        ? { ...config.smtp, password: channel.secrets.smtpPassword }
        : deps.installSmtp;
      if (!server) {
        throw new SendError('this install has no SMTP server (SMTP_HOST) to send with', {
          isRetryable: false,
        });
      }
      await sendMail(
        server,
        {
          to: config.to,
          subject: notification.title,
          text: mailText(notification),
          // The same event mailed twice carries the same id, so that a filter can drop one.
          headers: { 'X-Jarvis-Event-Id': notification.eventId },
        },
        { guard: config.smtp ? deps.guard : undefined, timeoutMs: deps.timeoutMs, signal },
      );
    },
  };
}

function mailText(notification: Notification): string {
  const parts = [notification.text || notification.title];
  if (notification.url) parts.push(`Open in Jarvis: ${notification.url}`);
  parts.push('-- \nJarvis. Choose what reaches you in Settings.');
  return parts.join('\n\n');
}
