import { randomUUID } from 'node:crypto';
import { defineEvent } from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Bus } from './bus';
import {
  type EventReader,
  ensureEventConsumer,
  ensureEventStream,
  readEvents,
} from './event-stream';
import { connectTestBus } from './testing';
import { publishWork, startWorker } from './work-queue';

// Readers of an event stream on the machine's NATS, in a namespace of this file's own.
const STREAM = { stream: 'NOTES_FEED', subjects: 'notes.feed.>', maxAgeMs: 60_000 };
const note = z.object({ text: z.string() });

let bus: Bus;

beforeAll(async () => {
  bus = await connectTestBus();
  await ensureEventStream(bus, STREAM);
});

afterAll(async () => {
  const jsm = await bus?.nc.jetstreamManager();
  await jsm?.streams.delete(bus.streamName(STREAM.stream));
  await bus?.close();
});

async function consumersOf(subject: string) {
  const jsm = await bus.nc.jetstreamManager();
  const all = await jsm.consumers.list(bus.streamName(STREAM.stream)).next();
  return all.filter((consumer) => consumer.config.filter_subject === bus.subject(subject));
}

describe('readEvents', () => {
  it('reads its subject in order, and leaves no consumer behind once stopped', async () => {
    const subject = `notes.feed.${randomUUID()}`;
    const seen: string[] = [];
    const readers: EventReader[] = [];
    for (let i = 0; i < 3; i += 1) {
      readers.push(
        await readEvents(bus, { stream: STREAM.stream, subject, schema: note, afterSeq: 0 }, (e) =>
          seen.push(e.text),
        ),
      );
    }
    const contract = defineEvent(subject, note);
    await publishWork(bus, contract, { text: 'one' }, randomUUID());
    await publishWork(bus, contract, { text: 'two' }, randomUUID());
    await waitFor(() => seen.length === 6, { what: 'every reader to see both events' });
    const consumers = await consumersOf(subject);

    for (const reader of readers) await reader.stop();

    expect(seen.filter((text) => text === 'one')).toHaveLength(3);
    expect(consumers).toHaveLength(3);
    expect(await consumersOf(subject)).toEqual([]);
  });
});

describe('ensureEventConsumer', () => {
  it('starts after what the stream already keeps, is shared, and keeps its place', async () => {
    const subject = `notes.feed.${randomUUID()}`;
    const contract = defineEvent(subject, note);
    const options = {
      stream: STREAM.stream,
      consumer: `feed-${randomUUID().slice(0, 8)}`,
      subjects: subject,
      ackWaitMs: 5_000,
      maxDeliver: 3,
      maxInFlight: 4,
    };
    await publishWork(bus, contract, { text: 'before' }, 'event-before');
    await ensureEventConsumer(bus, options);
    const seen: Array<{ text: string; messageId: string | undefined; subject: string }> = [];
    const handle = async (
      event: { text: string },
      message: { messageId?: string; subject: string },
    ) => {
      seen.push({ text: event.text, messageId: message.messageId, subject: message.subject });
      return { type: 'ack' as const };
    };
    // Two replicas on the one consumer.
    const first = await startWorker(bus, contract, options, handle);
    const second = await startWorker(bus, contract, options, handle);

    for (const text of ['one', 'two', 'three'])
      await publishWork(bus, contract, { text }, `event-${text}`);
    await waitFor(() => seen.length === 3, { what: 'the three new events' });
    await first.stop();
    await second.stop();
    // Ensured again (the next start): it goes on where it was, not from the stream's start.
    await ensureEventConsumer(bus, options);
    await publishWork(bus, contract, { text: 'four' }, 'event-four');
    const third = await startWorker(bus, contract, options, handle);
    await waitFor(() => seen.length === 4, { what: 'the fourth event' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await third.stop();

    expect(seen.map((one) => one.text).sort()).toEqual(['four', 'one', 'three', 'two']);
    expect(seen.find((one) => one.text === 'two')).toEqual({
      text: 'two',
      messageId: 'event-two',
      subject: bus.subject(subject),
    });
  });
});
