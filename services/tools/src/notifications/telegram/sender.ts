import type { Pool } from '@jarvis/db';
import { GrammyError } from 'grammy';
import { type ChannelSender, type Notification, SendError } from '../channel';
import { describeTelegramError, type TelegramBot } from './bot';
import { saveQuestionMessages } from './question-messages-repository';
import { type SendTextOptions, sendText } from './send-text';
import { escapeHtml } from './telegram-html';

// A title longer than this is cut: it is a heading, and the text carries the rest.
const TITLE_MAX = 256;

// Under a mission's question, where Telegram opens the reply for it (force_reply).
export const QUESTION_REPLY_HINT = 'Reply to this message to answer it.';

// Sends a notification to the user's linked chat: the title in bold, the text escaped (split
// into as many messages as it needs), a link to the UI; for an approval request the Approve and
// Deny buttons, which the elected poller's callback handler decides; for a mission's question a
// reply asked for, which the chat handler takes as the answer to that question (the sent
// messages are kept for it).
export function createTelegramSender(deps: { telegram: TelegramBot; pool: Pool }): ChannelSender {
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
      const { chatId } = channel.config;
      const url = notification.url;
      const links = [
        ...(notification.question ? [escapeHtml(QUESTION_REPLY_HINT)] : []),
        ...(url ? [`<a href="${escapeHtml(url)}">Open in Jarvis</a>`] : []),
      ];
      let sent: number[];
      try {
        sent = await sendText(bot.api, chatId, notification.text, {
          header: `<b>${escapeHtml(notification.title.slice(0, TITLE_MAX))}</b>\n\n`,
          ...(links.length > 0 ? { footer: `\n\n${links.join('\n')}` } : {}),
          ...replyMarkupOf(notification),
          signal,
        });
      } catch (error) {
        throw toSendError(error);
      }
      // Kept once sent: a store that fails makes the delivery try again, which sends the question
      // twice rather than leave a reply to it unmatched.
      if (notification.question) {
        await saveQuestionMessages(deps.pool, chatId, sent, {
          userId: channel.userId,
          ...notification.question,
        });
      }
    },
  };
}

function replyMarkupOf(notification: Notification): Pick<SendTextOptions, 'replyMarkup'> {
  const { approvalId, question } = notification;
  if (notification.kind === 'approval_request' && approvalId) {
    return {
      replyMarkup: {
        inline_keyboard: [
          [
            { text: 'Approve', callback_data: `approve:${approvalId}` },
            { text: 'Deny', callback_data: `deny:${approvalId}` },
          ],
        ],
      },
    };
  }
  if (question) {
    return { replyMarkup: { force_reply: true, input_field_placeholder: 'Your answer' } };
  }
  return {};
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
