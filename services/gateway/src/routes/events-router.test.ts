import { randomUUID } from 'node:crypto';
import { ensureEventStream, publishWork } from '@jarvis/bus';
import { defineEvent, USER_EVENTS_STREAM, UserEvent, userEventSubject } from '@jarvis/contracts';
import { connectSse, type SseConnection, waitFor } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { badRequest, type RouterFixture, startRouterFixture } from './router-fixture';

// GET /v1/events over the machine's NATS: the user's events as a producer publishes them, in
// order, only theirs, resumed after Last-Event-ID; at most EVENT_STREAMS_PER_USER at once.
const EVENT_STREAMS_PER_USER = 3;
let harness: RouterFixture;
const connections: SseConnection[] = [];

beforeAll(async () => {
  harness = await startRouterFixture('/v1/events', {
    eventStreamsPerUser: EVENT_STREAMS_PER_USER,
  });
  await ensureEventStream(harness.bus, USER_EVENTS_STREAM);
});

afterEach(() => {
  for (const connection of connections.splice(0)) connection.close();
});

afterAll(async () => {
  const jsm = await harness?.bus.nc.jetstreamManager();
  await jsm?.streams.delete(harness.bus.streamName(USER_EVENTS_STREAM.stream));
  await harness?.stop();
});

function missionEvent(objective: string): UserEvent {
  return {
    type: 'mission_updated',
    occurredAt: new Date().toISOString(),
    mission: { id: randomUUID(), objective, status: 'running', conversationId: randomUUID() },
    change: 'started',
  };
}

async function publish(userId: string, objective: string): Promise<void> {
  const contract = defineEvent(userEventSubject(userId), UserEvent);
  await publishWork(harness.bus, contract, missionEvent(objective), randomUUID());
}

async function listen(key: string, lastEventId?: string): Promise<SseConnection> {
  const connection = await connectSse(harness.url, {
    headers: {
      authorization: `Bearer ${key}`,
      accept: 'text/event-stream',
      ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
    },
  });
  connections.push(connection);
  return connection;
}

// The consumers reading this user's events on the USER_EVENTS stream.
async function consumersOf(userId: string) {
  const jsm = await harness.bus.nc.jetstreamManager();
  const stream = harness.bus.streamName(USER_EVENTS_STREAM.stream);
  const subject = harness.bus.subject(userEventSubject(userId));
  const consumers = await jsm.consumers.list(stream).next();
  return consumers.filter((consumer) => consumer.config.filter_subject === subject);
}

const objectiveOf = (data: string) =>
  (JSON.parse(data) as { mission: { objective: string } }).mission.objective;

describe('GET /v1/events', () => {
  it("streams only the key's user's new events, with stream sequences as ids", async () => {
    await publish(harness.alice.id, 'before connecting');
    const stream = await listen(harness.alice.key);

    await publish(harness.alice.id, 'first');
    await publish(harness.bob.id, "bob's");
    await publish(harness.alice.id, 'second');
    const events = [await stream.next(), await stream.next()];

    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(stream.response.headers.get('cache-control')).toBe('no-cache');
    expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
    expect(events.map((event) => event.event)).toEqual(['mission_updated', 'mission_updated']);
    expect(events.map((event) => objectiveOf(event.data))).toEqual(['first', 'second']);
    expect(Number(events[1]?.id)).toBeGreaterThan(Number(events[0]?.id));
  });

  it('resumes right after Last-Event-ID, missing nothing and repeating nothing', async () => {
    const first = await listen(harness.alice.key);
    await publish(harness.alice.id, 'seen');
    const seen = await first.next();
    first.close();
    await publish(harness.alice.id, 'missed 1');
    await publish(harness.alice.id, 'missed 2');

    const again = await listen(harness.alice.key, seen.id);
    await publish(harness.alice.id, 'live');
    const events = [await again.next(), await again.next(), await again.next()];

    expect(events.map((event) => objectiveOf(event.data))).toEqual([
      'missed 1',
      'missed 2',
      'live',
    ]);
  });

  it('refuses a Last-Event-ID that is not one of its ids, and a missing key', async () => {
    const reply = await fetch(harness.url, {
      headers: { authorization: `Bearer ${harness.alice.key}`, 'last-event-id': 'abc' },
    });
    expect({ status: reply.status, body: await reply.json() }).toEqual(
      badRequest('Last-Event-ID: the id of an event of this stream'),
    );
    expect((await fetch(harness.url)).status).toBe(401);
  });

  it('leaves no consumer on the server once its streams close', async () => {
    const streams = [];
    for (let i = 0; i < EVENT_STREAMS_PER_USER; i += 1)
      streams.push(await listen(harness.alice.key));
    await waitFor(async () => (await consumersOf(harness.alice.id)).length === streams.length, {
      what: 'a consumer per stream',
    });

    for (const stream of streams) stream.close();

    await waitFor(async () => (await consumersOf(harness.alice.id)).length === 0, {
      what: 'the consumers to go',
    });
  });

  it('answers 429 past the open streams a user may hold, and admits again once one closes', async () => {
    const streams = [];
    for (let i = 0; i < EVENT_STREAMS_PER_USER; i += 1) streams.push(await listen(harness.bob.key));

    const refused = await harness.call('GET', '', { key: harness.bob.key });
    // Per user: another user's streams do not count.
    const alice = await listen(harness.alice.key);
    streams[0]?.close();
    const admitted = await waitFor(async () => {
      const stream = await listen(harness.bob.key);
      return stream.response.status === 200 ? stream : undefined;
    });

    expect(refused).toEqual({
      status: 429,
      body: {
        error: {
          code: 'rate_limited',
          message: `too many open event streams: ${EVENT_STREAMS_PER_USER} per user; close one first`,
        },
      },
    });
    expect(alice.response.status).toBe(200);
    expect(admitted.response.status).toBe(200);
  });
});
