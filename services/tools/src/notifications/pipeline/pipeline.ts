import { randomUUID } from 'node:crypto';
import {
  type Bus,
  ensureEventConsumer,
  ensureUserEventStream,
  ensureWorkQueue,
  publishWork,
  startWorker,
  type WorkQueueOptions,
} from '@jarvis/bus';
import {
  type ChannelType,
  defineEvent,
  Id,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import { z } from 'zod';
import type { ToolsMetrics } from '../../tools-metrics';
import type { Notification } from '../channel';
import { listChannels } from '../channels-repository';
import { getSettings } from '../settings-repository';
import { type DeliverDeps, deliver } from './deliver';
import {
  type DueDelivery,
  insertDeliveries,
  type NewDelivery,
  queueDue,
  queueOverdue,
} from './deliveries-repository';
import { mapEvent } from './map-event';
import { quietHoursEnd } from './quiet-hours';

export type PipelineDeps = DeliverDeps & {
  bus: Bus;
  // The UI's address (PUBLIC_URL): notifications link to it when set.
  publicUrl: string | undefined;
  // How often the sweeper looks for deliveries to queue (retries due, held ones whose quiet hours
  // ended, lost work messages): a retry waits up to this much past its time. And how long a
  // queued delivery stays untouched before its work message counts as lost.
  sweepIntervalMs: number;
  overdueMs: number;
};

// The work queue of deliveries: a message names a delivery row, which says everything else. Only
// this service publishes and reads it.
const deliveryWork = defineEvent('notifications.deliveries', z.object({ deliveryId: Id }));

const DELIVERY_QUEUE = {
  stream: 'NOTIFY_DELIVERIES',
  consumer: 'notifications-worker',
  // How many sends one process has going at once.
  maxInFlight: 32,
  // Redelivered only when a worker died or the database failed; the database counts attempts
  // (NOTIFY_MAX_ATTEMPTS), and the sweeper queues again what the queue gave up on.
  maxDeliver: 10,
  // Shorter than the sweeper's overdueMs: work queued again because its message was lost must
  // not be dropped as a duplicate of it.
  duplicateWindowMs: 30_000,
} satisfies Omit<WorkQueueOptions, 'ackWaitMs'>;

// The durable consumer of user events, shared by every replica: each event is mapped once.
const EVENT_QUEUE = {
  stream: USER_EVENTS_STREAM.stream,
  consumer: 'notifications',
  ackWaitMs: 30_000,
  maxDeliver: -1,
  maxInFlight: 16,
};
const userEvents = defineEvent(userEventSubject('*'), UserEvent);

// Deliveries one statement of the sweeper queues.
const SWEEP_BATCH = 500;

export type NotificationPipeline = { stop(): Promise<void> };

// User events become deliveries, and deliveries are sent: the event consumer only inserts rows
// and queues them, so a channel that is down holds up nothing before it; the worker makes one
// attempt per message; the sweeper queues retries when due, held deliveries when quiet hours end,
// and work whose message was lost.
export async function startNotificationPipeline(deps: PipelineDeps): Promise<NotificationPipeline> {
  const workQueue = { ...DELIVERY_QUEUE, ackWaitMs: deps.sendTimeoutMs + 30_000 };
  await ensureUserEventStream(deps.bus);
  await ensureEventConsumer(deps.bus, { ...EVENT_QUEUE, subjects: userEventSubject('*') });
  await ensureWorkQueue(deps.bus, deliveryWork, workQueue);
  // Every outcome is acked: the row holds what comes next (a retry's time), and the sweeper
  // queues it then.
  const worker = await startWorker(deps.bus, deliveryWork, workQueue, async ({ deliveryId }) => {
    await deliver(deps, deliveryId);
    return { type: 'ack' };
  });
  const consumer = await startWorker(deps.bus, userEvents, EVENT_QUEUE, async (event, message) => {
    const userId = message.subject.slice(message.subject.lastIndexOf('.') + 1);
    // The producer's id (a schedule run's key, an approval's): the same event seen again, from a
    // retried producer or a redelivery, makes no second delivery. The sequence only if it had none.
    const eventId = message.messageId ?? `seq:${message.seq}`;
    await queueEvent(deps, userId, eventId, event);
    return { type: 'ack' };
  });
  const sweeper = startSweeper(deps);
  return {
    async stop() {
      // Intake first: nothing new is queued while the worker finishes the sends in hand.
      await consumer.stop();
      await sweeper.stop();
      await worker.stop();
    },
  };
}

// Maps one event, inserts a delivery per subscribed channel and queues those that are due.
async function queueEvent(
  deps: PipelineDeps,
  userId: string,
  eventId: string,
  event: UserEvent,
): Promise<void> {
  const mapped = mapEvent(event, eventId, deps.publicUrl);
  if (!mapped || !Id.safeParse(userId).success) return;
  const { channels, toPublish, isHeld } = await storeNotification(
    deps.pool,
    userId,
    mapped.notification,
    mapped.isUrgent,
  );
  if (isHeld) countHeld(deps.metrics, channels);
  await publishDeliveries(deps.bus, toPublish);
}

// Deliveries stored to wait for the end of quiet hours, counted once their rows are committed. An
// event seen again (redelivered after a crash) counts its held deliveries again: rare enough.
export function countHeld(metrics: ToolsMetrics | undefined, channels: ChannelType[]): void {
  for (const channel of channels) metrics?.countDelivery(channel, 'held');
}

// Inserts the deliveries of a notification to every channel of the user subscribed to its
// kind, held until quiet hours end unless it is urgent. Answers the channels it goes to, the
// deliveries to publish once the rows are committed (a worker looking earlier finds none), and
// whether they are held.
export async function storeNotification(
  db: Queryable,
  userId: string,
  notification: Notification,
  isUrgent: boolean,
): Promise<{ channels: ChannelType[]; toPublish: DueDelivery[]; isHeld: boolean }> {
  // Listed without their secrets: storing a delivery needs none, and a channel whose secrets do
  // not open must fail its own deliveries, not stop the user's events from being read.
  const channels = (await listChannels(db, userId)).filter(
    (channel) => channel.isConfirmed && channel.events.includes(notification.kind),
  );
  if (channels.length === 0) return { channels: [], toPublish: [], isHeld: false };
  const settings = await getSettings(db, userId);
  const heldUntil =
    isUrgent || !settings.quietHours
      ? undefined
      : quietHoursEnd(new Date(), settings.quietHours, settings.timeZone);
  const rows: NewDelivery[] = channels.map((channel) => ({
    id: randomUUID(),
    userId,
    channel: channel.type,
    notification,
    isUrgent,
    heldUntil,
  }));
  const stored = await insertDeliveries(db, rows);
  return {
    channels: channels.map((channel) => channel.type),
    toPublish: stored.filter((delivery) => delivery.status === 'queued'),
    isHeld: heldUntil !== undefined,
  };
}

// A delivery's work message is named by the delivery and its attempts so far: publishing the same
// one twice (an event seen again, two sweepers) stores it once, and each retry is a new message.
export async function publishDeliveries(bus: Bus, due: readonly DueDelivery[]): Promise<void> {
  await Promise.all(
    due.map(({ id, attempts }) =>
      publishWork(bus, deliveryWork, { deliveryId: id }, attempts === 0 ? id : `${id}:${attempts}`),
    ),
  );
}

type Sweeper = { stop(): Promise<void> };

function startSweeper(deps: PipelineDeps): Sweeper {
  let running: Promise<void> | undefined;
  const sweep = async () => {
    // A full batch means more are due (a channel back after an outage): on until all are queued.
    for (let due = SWEEP_BATCH; due === SWEEP_BATCH; ) {
      const batch = await queueDue(deps.pool, SWEEP_BATCH);
      await publishDeliveries(deps.bus, batch);
      due = batch.length;
    }
    const overdue = await queueOverdue(deps.pool, deps.overdueMs, SWEEP_BATCH);
    // A lost message that was not lost after all finds its delivery leased or done: publishing
    // again never sends twice.
    await publishDeliveries(deps.bus, overdue);
    if (overdue.length > 0) {
      deps.logger.warn({ count: overdue.length }, 'queued notification deliveries again');
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = sweep()
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'notification sweep failed'))
      .finally(() => {
        running = undefined;
      });
  }, deps.sweepIntervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
