import type { Api } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import { grammySignal } from './bot';
import { splitForTelegram, TELEGRAM_MESSAGE_MAX } from './telegram-html';

export type SendTextOptions = {
  // Already escaped HTML put before the first part and after the last (a title, a link).
  header?: string;
  footer?: string;
  // Buttons under the last part.
  buttons?: InlineKeyboardMarkup;
  signal?: AbortSignal;
};

// Sends plain text to a chat in HTML parse mode, escaped, split into as many messages as
// Telegram's limit needs, in order.
export async function sendText(
  api: Api,
  chatId: string,
  text: string,
  options: SendTextOptions = {},
): Promise<void> {
  const header = options.header ?? '';
  const footer = options.footer ?? '';
  const parts = splitForTelegram(text, TELEGRAM_MESSAGE_MAX - header.length - footer.length);
  for (const [index, part] of parts.entries()) {
    const isFirst = index === 0;
    const isLast = index === parts.length - 1;
    await api.sendMessage(
      chatId,
      `${isFirst ? header : ''}${part}${isLast ? footer : ''}`,
      {
        parse_mode: 'HTML',
        link_preview_options: { is_disabled: true },
        ...(isLast && options.buttons ? { reply_markup: options.buttons } : {}),
      },
      grammySignal(options.signal),
    );
  }
}
