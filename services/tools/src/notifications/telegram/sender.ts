import { GrammyError } from 'grammy';
import { type ChannelSender, SendError } from '../channel';
import { describeTelegramError, type TelegramBot } from './bot';
import { sendText } from './send-text';
import { escapeHtml } from './telegram-html';

// A title longer than this is cut: it is a heading, and the text carries the rest.
const TITLE_MAX = 256;

// Sends a notification to the user's linked chat: the title in bold, the text escaped (split
// into as many messages as it needs), a link to the UI, and for an approval request the Approve
// and Deny buttons, which the elected poller's callback handler decides.
export function createTelegramSender(deps: { telegram: TelegramBot }): ChannelSender {
  return {
    type: 'telegram',
    async send(channel, notification, signal) {
      if (channel.config.type !== 'telegram') {
        throw new SendError('not a Telegram channel', { isRetryable: false });
      }
      const { bot } = deps.telegram;
      const state = deps.telegram.state();
      if (!bot || state !== 'ready') {
        // Not ready yet (Telegram unreachable at start) is worth waiting for; no bot or a
        // rejected token is not.
        throw new SendError(deps.telegram.unavailableReason() ?? 'no Telegram bot', {
          isRetryable: state === 'starting',
        });
      }
      const url = notification.url;
      const approvalId = notification.approvalId;
      try {
        await sendText(bot.api, channel.config.chatId, notification.text, {
          header: `<b>${escapeHtml(notification.title.slice(0, TITLE_MAX))}</b>\n\n`,
          ...(url ? { footer: `\n\n<a href="${escapeHtml(url)}">Open in Jarvis</a>` } : {}),
          ...(notification.kind === 'approval_request' && approvalId
            ? {
                buttons: {
                  inline_keyboard: [
                    [
                      { text: 'Approve', callback_data: `approve:${approvalId}` },
                      { text: 'Deny', callback_data: `deny:${approvalId}` },
                    ],
                  ],
                },
              }
            : {}),
          signal,
        });
      } catch (error) {
        throw toSendError(error);
      }
    },
  };
}

// Telegram's 429 says how long to wait (parameters.retry_after, in seconds); a 5xx, a network
// failure or a timeout is worth another try; any other answer (a chat that blocked the bot, a
// chat that is gone) is final.
function toSendError(error: unknown): SendError {
  const reason = `Telegram: ${describeTelegramError(error)}`;
  if (error instanceof GrammyError) {
    if (error.error_code === 429) {
      const retryAfterS = error.parameters.retry_after;
      return new SendError(reason, {
        isRetryable: true,
        ...(retryAfterS !== undefined ? { retryAfterMs: retryAfterS * 1_000 } : {}),
      });
    }
    return new SendError(reason, { isRetryable: error.error_code >= 500 });
  }
  return new SendError(reason, { isRetryable: true });
}
