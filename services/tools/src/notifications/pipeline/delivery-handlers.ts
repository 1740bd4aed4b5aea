import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import {
  type ChannelType,
  notificationsDeliveriesList,
  notificationsTest,
  type TestResponse,
} from '@jarvis/contracts';
import { getChannel } from '../channels-repository';
import { saveTimeZone } from '../settings-repository';
import { type DeliverDeps, deliver } from './deliver';
import { insertDeliveries, listDeliveries, toDeliveryView } from './deliveries-repository';

type DeliveryHandlersDeps = DeliverDeps & { bus: Bus };

// The gateway waits 5 s for an answer: a test's one attempt ends before that, a timeout
// included, so that the user hears the reason rather than a gateway timeout.
const TEST_SEND_TIMEOUT_MS = 4_000;

export function registerDeliveryHandlers(deps: DeliveryHandlersDeps) {
  return [
    deps.bus.serve(notificationsDeliveriesList, async (request) => {
      await saveTimeZone(deps.pool, request.userId, request.userTimeZone);
      const { deliveries, nextBefore } = await listDeliveries(deps.pool, {
        userId: request.userId,
        channel: request.channel,
        before: request.before ? new Date(request.before) : undefined,
        limit: request.limit,
      });
      return {
        deliveries: deliveries.map(toDeliveryView),
        ...(nextBefore ? { nextBefore: nextBefore.toISOString() } : {}),
      };
    }),
    deps.bus.serve(notificationsTest, async (request) => {
      await saveTimeZone(deps.pool, request.userId, request.userTimeZone);
      return sendTest(deps, request.userId, request.channel);
    }),
  ];
}

// A test goes through whatever the channel subscribes to and through quiet hours, is tried once,
// and is kept in the history like any delivery.
async function sendTest(
  deps: DeliveryHandlersDeps,
  userId: string,
  type: ChannelType,
): Promise<TestResponse> {
  const channel = await getChannel(deps.pool, deps.box, userId, type);
  if (!channel) throw new BusError('not_found', `you have no ${type} channel`);
  const id = randomUUID();
  await insertDeliveries(deps.pool, [
    {
      id,
      userId,
      channel: type,
      notification: {
        eventId: `test:${id}`,
        kind: 'test',
        occurredAt: new Date().toISOString(),
        title: 'Jarvis test notification',
        text: `This ${type} channel works: Jarvis can reach you here.`,
        // Where the user asked for it: a tap on a pushed test opens Settings again.
        path: '/settings',
      },
      isUrgent: true,
      heldUntil: undefined,
    },
  ]);
  const result = await deliver(deps, id, {
    maxAttempts: 1,
    sendTimeoutMs: Math.min(deps.sendTimeoutMs, TEST_SEND_TIMEOUT_MS),
  });
  const isSent = result.status === 'sent';
  return {
    delivery: {
      id,
      channel: type,
      status: isSent ? 'sent' : 'failed',
      error: result.status === 'failed' ? result.error : null,
    },
  };
}
