import { randomUUID } from 'node:crypto';
import { defineEvent } from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Bus } from './bus';
import { type EventReader, ensureEventStream, readEvents } from './event-stream';
import { connectTestBus } from './testing';
import { publishWork } from './work-queue';

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
