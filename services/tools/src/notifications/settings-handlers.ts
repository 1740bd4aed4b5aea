import type { Bus } from '@jarvis/bus';
import {
  notificationsChannelsDelete,
  notificationsChannelsList,
  notificationsChannelsPut,
  notificationsEmailConfirm,
  notificationsSettingsGet,
  notificationsSettingsPut,
} from '@jarvis/contracts';
import {
  type ChannelSettingsDeps,
  confirmEmail,
  listChannelViews,
  removeChannel,
  saveChannel,
} from './channel-settings';
import { getSettings, putSettings, saveTimeZone } from './settings-repository';

export type SettingsHandlersDeps = ChannelSettingsDeps & { bus: Bus };

// The notification settings' RPCs (the gateway's /v1/notifications/channels and /settings).
// Every request carries the user's zone: it is kept for quiet hours and Telegram turns.
export function registerSettingsHandlers(deps: SettingsHandlersDeps) {
  const { bus, pool } = deps;
  const remember = (request: { userId: string; userTimeZone: string }) =>
    saveTimeZone(pool, request.userId, request.userTimeZone);
  return [
    bus.serve(notificationsChannelsList, async (request) => {
      await remember(request);
      return { channels: await listChannelViews(pool, request.userId) };
    }),
    bus.serve(notificationsChannelsPut, async (request) => {
      await remember(request);
      return { channel: await saveChannel(deps, request.userId, request.channel) };
    }),
    bus.serve(notificationsChannelsDelete, async (request) => {
      await remember(request);
      await removeChannel(deps, request.userId, request.type);
      return {};
    }),
    bus.serve(notificationsEmailConfirm, async (request) => {
      await remember(request);
      return { channel: await confirmEmail(deps, request.userId, request.code) };
    }),
    bus.serve(notificationsSettingsGet, async (request) => {
      await remember(request);
      return { settings: await getSettings(pool, request.userId) };
    }),
    bus.serve(notificationsSettingsPut, async (request) => ({
      settings: await putSettings(pool, request.userId, {
        timeZone: request.userTimeZone,
        quietHours: request.quietHours,
      }),
    })),
  ];
}
