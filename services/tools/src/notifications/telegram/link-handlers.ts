import { type Bus, BusError } from '@jarvis/bus';
import { notificationsTelegramLink } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { saveTimeZone } from '../settings-repository';
import type { TelegramBot } from './bot';
import { createLinkCode } from './link-codes';

export type TelegramHandlersDeps = { bus: Bus; pool: Pool; telegram: TelegramBot };

// notifications.telegram.link: a single-use code the user sends to the install's bot as
// /start CODE, and the t.me link that opens the chat with it filled in. Any replica answers;
// the code is in the database, where the polling replica finds it.
export function registerTelegramHandlers(deps: TelegramHandlersDeps) {
  return [
    deps.bus.serve(notificationsTelegramLink, async ({ userId, userTimeZone }) => {
      const info = deps.telegram.info();
      if (!info) {
        throw new BusError('unavailable', deps.telegram.unavailableReason() ?? 'no Telegram bot');
      }
      // The zone the user's Telegram turns are told in, kept as the gateway last said it.
      await saveTimeZone(deps.pool, userId, userTimeZone);
      const { code, expiresAt } = await createLinkCode(deps.pool, userId);
      return {
        code,
        expiresAt: expiresAt.toISOString(),
        url: info.username ? `https://t.me/${info.username}?start=${code}` : null,
      };
    }),
  ];
}
