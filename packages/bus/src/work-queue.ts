import type { EventContract } from '@jarvis/contracts';
import { extractTraceContext, injectTraceContext, SpanKind, withSpan } from '@jarvis/telemetry';
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamManager,
  type JsMsg,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from 'nats';
import type { z } from 'zod';
import type { Bus } from './bus';
import { carrierFrom, decodeJson, encodeJson, headersFrom, parseOrThrow } from './codec';

export type WorkQueueOptions = {
  // Stream name, before the namespace prefix.
  stream: string;
  // Durable consumer name: every replica of one service shares it and so shares the work.
  consumer: string;
  // A message not acked within this time goes to another worker (the worker died).
  ackWaitMs: number;
  maxDeliver: number;
  // How many messages one process works on at once.
  maxInFlight: number;
  // Window in which the same message id is stored only once.
  duplicateWindowMs?: number;
};

export type Delivery = {
  // 1 on the first delivery, 2 on the first redelivery, ...
  deliveryCount: number;
  // The full subject it was published on: a stream of many subjects (one per user) tells whose
  // message it is by it.
  subject: string;
  // Its stream sequence, and the id it was published with (publishWork's messageId), if any.
  seq: number;
  messageId: string | undefined;
};

// What a handler wants done with its message. `retry` waits before the next delivery.
export type Outcome = { type: 'ack' } | { type: 'retry'; delayMs: number } | { type: 'drop' };

export type WorkHandler<P extends z.ZodType> = (
  payload: z.infer<P>,
  delivery: Delivery,
) => Promise<Outcome>;

export type Worker = { stop(): Promise<void> };

// Creates the stream, or brings an existing one to this configuration: whichever replica or
// service starts first creates it, and a changed setting reaches it on the next start.
export async function putStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  const existing = await jsm.streams.info(config.name).catch(() => undefined);
  if (existing) await jsm.streams.update(config.name, config);
  else await jsm.streams.add(config);
}

// A JetStream work queue: each message is handed to exactly one consumer at a time and
// redelivered until it is acked, so work survives the crash of the process doing it.
export async function ensureWorkQueue<P extends z.ZodType>(
  bus: Bus,
  contract: EventContract<P>,
  options: WorkQueueOptions,
): Promise<void> {
  const jsm = await bus.nc.jetstreamManager();
  const name = bus.streamName(options.stream);
  const streamConfig = {
    name,
    subjects: [bus.subject(contract.subject)],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    duplicate_window: nanos(options.duplicateWindowMs ?? 10 * 60_000),
  };
  await putStream(jsm, streamConfig);

  const consumerConfig = {
    durable_name: options.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_deliver: options.maxDeliver,
    max_ack_pending: Math.max(options.maxInFlight * 4, 100),
  };
  const consumer = await jsm.consumers.info(name, options.consumer).catch(() => undefined);
  if (consumer) await jsm.consumers.update(name, options.consumer, consumerConfig);
  else await jsm.consumers.add(name, consumerConfig);
}

// Publishes durably; `messageId` de-duplicates re-publishes within the stream's window.
export async function publishWork<P extends z.ZodType>(
  bus: Bus,
  contract: EventContract<P>,
  payload: z.input<P>,
  messageId: string,
): Promise<void> {
  const body = parseOrThrow(contract.payload, payload);
  bus.assertConnected();
  await bus.nc.jetstream().publish(bus.subject(contract.subject), encodeJson(body), {
    msgID: messageId,
    headers: headersFrom(injectTraceContext()),
  });
}

export async function startWorker<P extends z.ZodType>(
  bus: Bus,
  contract: EventContract<P>,
  options: WorkQueueOptions,
  handler: WorkHandler<P>,
): Promise<Worker> {
  const stream = bus.streamName(options.stream);
  const consumer = await bus.nc.jetstream().consumers.get(stream, options.consumer);
  const messages: ConsumerMessages = await consumer.consume({ max_messages: options.maxInFlight });
  const untrack = bus.trackConsumer(stream, options.consumer);
  const inFlight = new Set<Promise<void>>();

  const loop = (async () => {
    for await (const msg of messages) {
      const task = handleMessage(bus, contract, options, handler, msg).finally(() =>
        inFlight.delete(task),
      );
      inFlight.add(task);
      // Back-pressure: never hold more than maxInFlight messages in this process.
      while (inFlight.size >= options.maxInFlight) await Promise.race(inFlight);
    }
  })();

  return {
    async stop() {
      untrack();
      await messages.close();
      await loop;
      await Promise.allSettled(inFlight);
    },
  };
}

async function handleMessage<P extends z.ZodType>(
  bus: Bus,
  contract: EventContract<P>,
  options: WorkQueueOptions,
  handler: WorkHandler<P>,
  msg: JsMsg,
): Promise<void> {
  let payload: unknown;
  try {
    payload = decodeJson(msg.data);
  } catch {
    payload = undefined;
  }
  const parsed = contract.payload.safeParse(payload);
  if (!parsed.success) {
    // A message that can never be handled must not be redelivered forever.
    bus.logger.error({ subject: msg.subject, seq: msg.seq }, 'dropped malformed work message');
    msg.term();
    return;
  }
  // Tell JetStream we are alive during long work, so it does not hand the message to another
  // worker while this one is still on it.
  const heartbeat = setInterval(() => msg.working(), Math.max(options.ackWaitMs / 3, 200));
  const parent = extractTraceContext(carrierFrom(msg.headers));
  try {
    const outcome = await withSpan(
      `process ${contract.subject}`,
      {
        kind: SpanKind.CONSUMER,
        parent,
        attributes: { 'messaging.destination.name': msg.subject },
      },
      () =>
        handler(parsed.data, {
          deliveryCount: msg.info.deliveryCount,
          subject: msg.subject,
          seq: msg.seq,
          messageId: msg.headers?.get('Nats-Msg-Id') || undefined,
        }),
    );
    if (outcome.type === 'ack') msg.ack();
    else if (outcome.type === 'retry') msg.nak(outcome.delayMs);
    else msg.term();
  } catch (error) {
    bus.logger.error({ err: error, subject: msg.subject }, 'work handler failed; will retry');
    msg.nak(Math.min(1_000 * msg.info.deliveryCount, 30_000));
  } finally {
    clearInterval(heartbeat);
  }
}
