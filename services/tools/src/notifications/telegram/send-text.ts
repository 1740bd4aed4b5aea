import type { Api } from 'grammy';
import type { ForceReply, InlineKeyboardMarkup } from 'grammy/types';
import { grammySignal } from './bot';
import { splitForTelegram, TELEGRAM_MESSAGE_MAX } from './telegram-html';

export type SendTextOptions = {
  // Already escaped HTML put before the first part and after the last (a title, a link).
  header?: string;
  footer?: string;
  // Buttons under the last part, or a reply asked for to it.
  replyMarkup?: InlineKeyboardMarkup | ForceReply;
  signal?: AbortSignal;
};

// Sends plain text to a chat in HTML parse mode, escaped, split into as many messages as
// Telegram's limit needs, in order; answers the ids of the messages sent.
export async function sendText(
  api: Api,
  chatId: string,
  text: string,
  options: SendTextOptions = {},
): Promise<number[]> {
  const header = options.header ?? '';
  const footer = options.footer ?? '';
  const parts = splitForTelegram(text, TELEGRAM_MESSAGE_MAX - header.length - footer.length);
  const sent: number[] = [];
  for (const [index, part] of parts.entries()) {
    const isFirst = index === 0;
    const isLast = index === parts.length - 1;
    const message = await api.sendMessage(
      chatId,
      `${isFirst ? header : ''}${part}${isLast ? footer : ''}`,
      {
        parse_mode: 'HTML',
        link_preview_options: { is_disabled: true },
        ...(isLast && options.replyMarkup ? { reply_markup: options.replyMarkup } : {}),
      },
      grammySignal(options.signal),
    );
    sent.push(message.message_id);
  }
  return sent;
}
