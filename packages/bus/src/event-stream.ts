import { AckPolicy, DeliverPolicy, DiscardPolicy, nanos, RetentionPolicy, StorageType } from 'nats';
import type { z } from 'zod';
import type { Bus } from './bus';
import { BusError } from './bus-error';
import { decodeJson } from './codec';
import { putStream, type WorkQueueOptions } from './work-queue';

export type EventStreamOptions = {
  // Stream name, before the namespace prefix.
  stream: string;
  // The subjects it keeps, relative (a wildcard for one subject per user, say).
  subjects: string;
  // How long an event is kept for readers that were away.
  maxAgeMs: number;
};

// A re-published event (a retried job) within this window is stored once.
const DUPLICATE_WINDOW_MS = 2 * 60_000;

// JetStream failing (NATS down or restarting) reaches callers as the bus's 'unavailable', which
// an API answers 503, rather than as a raw NATS error that would become a 500.
async function reachStream<T>(bus: Bus, stream: string, work: () => Promise<T>): Promise<T> {
  bus.assertConnected();
  try {
    return await work();
  } catch (error) {
    bus.logger.warn({ err: error, stream }, 'event stream not reachable');
    throw new BusError('unavailable', `the ${stream} event stream could not be reached`);
  }
}

// A JetStream stream of events kept for a while (limits retention: reading removes nothing), so
// a reader that was away catches up from the last sequence it saw. Producers and readers both
// ensure it at start: whichever comes first creates it. Publish with publishWork (a message id
// de-duplicates).
export function ensureEventStream(bus: Bus, options: EventStreamOptions): Promise<void> {
  return reachStream(bus, options.stream, async () => {
    const jsm = await bus.nc.jetstreamManager();
    const name = bus.streamName(options.stream);
    const config = {
      name,
      subjects: [bus.subject(options.subjects)],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: nanos(options.maxAgeMs),
      duplicate_window: nanos(Math.min(DUPLICATE_WINDOW_MS, options.maxAgeMs)),
    };
    await putStream(jsm, config);
  });
}

// The sequence of the stream's latest event (0 when empty): reading after it gives only what is
// published from now on, even if the reader's consumer takes a moment to exist.
export function lastEventSeq(bus: Bus, stream: string): Promise<number> {
  return reachStream(bus, stream, async () => {
    const jsm = await bus.nc.jetstreamManager();
    const info = await jsm.streams.info(bus.streamName(stream));
    return info.state.last_seq;
  });
}

// A durable consumer of an event stream that every replica of a service shares, so each event is
// handled once (read it with startWorker and the same options). Created starting with the events
// published from then on: a service that starts reading a stream does not act on the day of
// events it already keeps. An existing consumer is left as it is, where it has got to.
export function ensureEventConsumer(
  bus: Bus,
  options: Omit<WorkQueueOptions, 'duplicateWindowMs'> & { subjects: string },
): Promise<void> {
  return reachStream(bus, options.stream, async () => {
    const jsm = await bus.nc.jetstreamManager();
    const stream = bus.streamName(options.stream);
    const existing = await jsm.consumers.info(stream, options.consumer).catch(() => undefined);
    if (existing) return;
    await jsm.consumers.add(stream, {
      durable_name: options.consumer,
      filter_subject: bus.subject(options.subjects),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
      ack_wait: nanos(options.ackWaitMs),
      max_deliver: options.maxDeliver,
      max_ack_pending: Math.max(options.maxInFlight * 4, 100),
    });
  });
}

export type EventReader = { stop(): Promise<void> };

// Reads one subject of an event stream in order, starting after sequence `afterSeq`, through an
// ordered consumer of its own. Stopping deletes the consumer: each one costs the server, and
// readers come and go with every connection. Only a reader whose process died leaves its consumer
// to the server's inactivity threshold (the client's 5 minutes: nats.js 2.29 drops a shorter one
// for a consumer that starts at a sequence). Events that do not match the schema are skipped.
export async function readEvents<P extends z.ZodType>(
  bus: Bus,
  options: { stream: string; subject: string; schema: P; afterSeq: number },
  onEvent: (event: z.output<P>, seq: number) => void,
): Promise<EventReader> {
  const consumer = await reachStream(bus, options.stream, () =>
    bus.nc.jetstream().consumers.get(bus.streamName(options.stream), {
      filterSubjects: bus.subject(options.subject),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: options.afterSeq + 1,
    }),
  );
  const messages = await reachStream(bus, options.stream, () =>
    consumer.consume({
      callback: (msg) => {
        let body: unknown;
        try {
          body = decodeJson(msg.data);
        } catch {
          body = undefined;
        }
        const parsed = options.schema.safeParse(body);
        if (parsed.success) onEvent(parsed.data, msg.seq);
        else bus.logger.warn({ subject: msg.subject, seq: msg.seq }, 'skipped malformed event');
      },
    }),
  );
  return {
    async stop() {
      await messages.close();
      // NATS may be down by now: the inactivity threshold then removes the consumer instead.
      await consumer.delete().catch((error: unknown) => {
        bus.logger.warn({ err: error, stream: options.stream }, 'event consumer not deleted');
      });
    },
  };
}
