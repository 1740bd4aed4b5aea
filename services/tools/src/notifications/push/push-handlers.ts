import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import {
  notificationsPushKey,
  notificationsPushSubscribe,
  notificationsPushSubscriptionsList,
  notificationsPushUnsubscribe,
  type PushSubscriptionView,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { OutboundGuard } from '@jarvis/net-guard';
import type { Logger } from '@jarvis/telemetry';
import { checkDestination } from '../channel-settings';
import { saveTimeZone } from '../settings-repository';
import {
  countPushSubscriptions,
  deletePushSubscription,
  listPushSubscriptions,
  type PushSubscriptionRecord,
  savePushSubscription,
} from './push-repository';

export type PushHandlersDeps = {
  bus: Bus;
  pool: Pool;
  guard: OutboundGuard;
  logger: Logger;
  // The install's VAPID public key, which browsers subscribe with.
  publicKey: string;
};

// Devices one user may subscribe: a person's phones, tablets and browsers, not a list whose every
// entry the install would push to for each event.
const MAX_DEVICES_PER_USER = 20;

// The Web Push RPCs (the gateway's /v1/notifications/push/*).
export function registerPushHandlers(deps: PushHandlersDeps) {
  const { bus, pool } = deps;
  const remember = (request: { userId: string; userTimeZone: string }) =>
    saveTimeZone(pool, request.userId, request.userTimeZone);
  return [
    bus.serve(notificationsPushKey, async (request) => {
      await remember(request);
      return { publicKey: deps.publicKey };
    }),
    bus.serve(notificationsPushSubscribe, async (request) => {
      await remember(request);
      const { endpoint, keys, deviceName } = request.subscription;
      // Checked now, so that the user hears it in Settings; the sender checks again at each
      // send, since a name can resolve elsewhere later.
      await checkDestination(deps.guard, endpoint, 'endpoint');
      const devices = await listPushSubscriptions(pool, request.userId);
      const isKnown = devices.some((device) => device.endpoint === endpoint);
      if (!isKnown && devices.length >= MAX_DEVICES_PER_USER) {
        throw new BusError(
          'bad_request',
          `endpoint: ${MAX_DEVICES_PER_USER} devices are subscribed already: remove one first`,
        );
      }
      const saved = await savePushSubscription(pool, {
        id: randomUUID(),
        userId: request.userId,
        endpoint,
        p256dh: keys.p256dh,
        auth: keys.auth,
        deviceName,
      });
      deps.logger.info(
        { userId: request.userId, endpointHost: new URL(endpoint).host },
        'a device subscribed to Web Push',
      );
      return { subscription: toView(saved) };
    }),
    bus.serve(notificationsPushSubscriptionsList, async (request) => {
      await remember(request);
      const devices = await listPushSubscriptions(pool, request.userId);
      return { subscriptions: devices.map(toView) };
    }),
    bus.serve(notificationsPushUnsubscribe, async (request) => {
      await remember(request);
      if (!(await deletePushSubscription(pool, request.userId, request.id))) {
        throw new BusError('not_found', 'no such device');
      }
      const left = await countPushSubscriptions(pool, request.userId);
      deps.logger.info({ userId: request.userId, devicesLeft: left }, 'a device unsubscribed');
      return {};
    }),
  ];
}

function toView(device: PushSubscriptionRecord): PushSubscriptionView {
  return {
    id: device.id,
    deviceName: device.deviceName,
    endpointHost: new URL(device.endpoint).host,
    createdAt: device.createdAt.toISOString(),
    lastSuccessAt: device.lastSuccessAt?.toISOString() ?? null,
  };
}
