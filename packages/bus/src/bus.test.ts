import { defineEvent, defineRpc } from '@jarvis/contracts';
import { activeTraceId, startTelemetry, type Telemetry, withSpan } from '@jarvis/telemetry';
import { uniqueNamespace, waitFor } from '@jarvis/testkit';
import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api';
import type { Subscription } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Bus } from './bus';
import { BusError, isBusError } from './bus-error';
import { decodeJson, encodeJson, ReplyEnvelope } from './codec';
import { ensureEventStream, lastEventSeq, readEvents } from './event-stream';
import { connectTestBus, startPrivateNats } from './testing';
import { publishWork } from './work-queue';

const NAMESPACE = uniqueNamespace('bus');

const echo = defineRpc(
  'echo.say',
  z.object({ text: z.string().min(1) }),
  z.object({ text: z.string(), servedBy: z.string() }),
);

const lookup = defineRpc(
  'notes.lookup',
  z.object({ id: z.string() }),
  z.object({ title: z.string().min(1) }),
);

const noteCreated = defineEvent('notes.created', z.object({ id: z.string().min(1) }));

type Gate = { promise: Promise<void>; open(): void };

function createGate(): Gate {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

async function catchBusError(promise: Promise<unknown>): Promise<BusError> {
  try {
    await promise;
  } catch (error) {
    if (isBusError(error)) return error;
    throw error;
  }
  throw new Error('expected the promise to reject with a BusError');
}

// What a raw client (not Bus.request) gets back: the envelope, validated.
async function rawRequest(bus: Bus, subject: string, body: Uint8Array) {
  const reply = await bus.nc.request(bus.subject(subject), body, { timeout: 2_000 });
  return ReplyEnvelope.parse(decodeJson(reply.data));
}

let telemetry: Telemetry;
let client: Bus;
let server: Bus;
// Per-test subscriptions, unsubscribed after each test so handlers never leak into the next one.
let subscriptions: Subscription[] = [];
// Handlers a test left blocked; opened after it so nothing keeps running into the next test.
let gates: Gate[] = [];

function track(subscription: Subscription): Subscription {
  subscriptions.push(subscription);
  return subscription;
}

beforeAll(async () => {
  // Registers the W3C propagator and the async context manager the bus relies on.
  telemetry = startTelemetry({ serviceName: 'bus-test' });
  client = await connectTestBus(NAMESPACE);
  server = await connectTestBus(NAMESPACE);
});

afterEach(async () => {
  for (const gate of gates) gate.open();
  gates = [];
  for (const subscription of subscriptions) subscription.unsubscribe();
  subscriptions = [];
  // Make sure the server has dropped the interest before the next test serves the same subject.
  await server.nc.flush();
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await telemetry?.stop();
});

describe('request/reply', () => {
  it('returns the validated reply of the serving handler', async () => {
    const seen: { text: string; subject: string }[] = [];
    track(
      server.serve(echo, async (request, context) => {
        seen.push({ text: request.text, subject: context.subject });
        return { text: request.text.toUpperCase(), servedBy: 'server' };
      }),
    );
    await server.nc.flush();

    const reply = await client.request(echo, { text: 'hello' });

    expect(reply).toEqual({ text: 'HELLO', servedBy: 'server' });
    expect(seen).toEqual([{ text: 'hello', subject: `${NAMESPACE}.echo.say` }]);
  });

  it('rejects invalid input on the caller side before sending it', async () => {
    // Nobody serves this subject: had the request been sent, it would fail as unavailable.
    const error = await catchBusError(client.request(echo, { text: '' }));

    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/^text: /);
  });

  it('answers a malformed request with a bad_request envelope, without calling the handler', async () => {
    let calls = 0;
    track(
      server.serve(echo, async (request) => {
        calls += 1;
        return { text: request.text, servedBy: 'server' };
      }),
    );
    await server.nc.flush();

    const wrongType = await rawRequest(client, echo.subject, encodeJson({ text: 5 }));
    expect(wrongType).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^text: /) },
    });

    const notJson = await rawRequest(client, echo.subject, new TextEncoder().encode('{"text":'));
    expect(notJson).toEqual({
      ok: false,
      error: { code: 'bad_request', message: 'message body is not valid JSON' },
    });

    const empty = await rawRequest(client, echo.subject, new Uint8Array());
    expect(empty).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^\(root\): /) },
    });

    expect(calls).toBe(0);
  });

  it('passes a BusError thrown by the handler to the caller with its code and message', async () => {
    track(
      server.serve(lookup, async (request) => {
        throw new BusError('not_found', `note ${request.id} does not exist`);
      }),
    );
    await server.nc.flush();

    const error = await catchBusError(client.request(lookup, { id: 'n-1' }));

    expect(error.code).toBe('not_found');
    expect(error.message).toBe('note n-1 does not exist');
  });

  it('answers payload_too_large when its reply exceeds what NATS carries', async () => {
    track(server.serve(lookup, async () => ({ title: 'x'.repeat(2 * 1_024 * 1_024) })));
    await server.nc.flush();

    const error = await catchBusError(client.request(lookup, { id: 'huge' }));

    expect(error.code).toBe('payload_too_large');
    // The server is still alive and answering.
    track(server.serve(echo, async ({ text }) => ({ text, servedBy: 'server' })));
    await server.nc.flush();
    expect(await client.request(echo, { text: 'still here' })).toEqual({
      text: 'still here',
      servedBy: 'server',
    });
  });

  it('hides the message of any other error behind internal', async () => {
    track(
      server.serve(lookup, async () => {
        throw new Error('password=hunter2 in connection string');
      }),
    );
    await server.nc.flush();

    const error = await catchBusError(client.request(lookup, { id: 'n-1' }));

    expect(error.code).toBe('internal');
    expect(error.message).toBe('internal error');
  });

  it('answers internal when the handler breaks its response schema', async () => {
    // Type-correct but invalid: only the runtime check of the response schema catches it.
    track(server.serve(lookup, async () => ({ title: '' })));
    await server.nc.flush();

    const error = await catchBusError(client.request(lookup, { id: 'n-1' }));

    expect(error.code).toBe('internal');
    expect(error.message).toBe('internal error');
  });

  it('answers internal on the caller side when a reply breaks the contract', async () => {
    // A raw responder stands in for a server built against an older contract.
    track(
      server.nc.subscribe(server.subject(lookup.subject), {
        callback: (_error, msg) => {
          msg.respond(encodeJson({ ok: true, data: { title: 42 } }));
        },
      }),
    );
    await server.nc.flush();

    const error = await catchBusError(client.request(lookup, { id: 'n-1' }));

    expect(error.code).toBe('internal');
    expect(error.message).toMatch(/^reply from notes\.lookup broke its contract: title: /);
  });

  it('fails fast as unavailable when no service listens', async () => {
    const startedAt = Date.now();
    const error = await catchBusError(client.request(lookup, { id: 'n-1' }, { timeoutMs: 5_000 }));
    const elapsedMs = Date.now() - startedAt;

    expect(error.code).toBe('unavailable');
    expect(error.message).toBe('notes service is not available');
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it('times out when the handler is slower than timeoutMs', async () => {
    const gate = createGate();
    gates.push(gate);
    track(
      server.serve(lookup, async () => {
        await gate.promise;
        return { title: 'too late' };
      }),
    );
    await server.nc.flush();

    const startedAt = Date.now();
    const error = await catchBusError(client.request(lookup, { id: 'n-1' }, { timeoutMs: 300 }));
    const elapsedMs = Date.now() - startedAt;

    expect(error.code).toBe('timeout');
    expect(error.message).toBe('notes service did not answer in time');
    expect(elapsedMs).toBeGreaterThanOrEqual(250);
    expect(elapsedMs).toBeLessThan(2_000);
  });
});

describe('replicas and namespaces', () => {
  it('hands each request to exactly one replica of the queue group, and to both over time', async () => {
    const replica = await connectTestBus(NAMESPACE);
    try {
      const calls = { server: 0, replica: 0 };
      track(
        server.serve(echo, async (request) => {
          calls.server += 1;
          return { text: request.text, servedBy: 'server' };
        }),
      );
      track(
        replica.serve(echo, async (request) => {
          calls.replica += 1;
          return { text: request.text, servedBy: 'replica' };
        }),
      );
      await server.nc.flush();
      await replica.nc.flush();

      const requestCount = 40;
      const replies = await Promise.all(
        Array.from({ length: requestCount }, (_, index) =>
          client.request(echo, { text: `n${index}` }),
        ),
      );
      // A PING round trip on each server connection: every copy NATS delivered before the PONG
      // has reached its handler, so a replica outside the queue group would show up here.
      await server.nc.flush();
      await replica.nc.flush();

      expect(replies.map((reply) => reply.text)).toEqual(
        Array.from({ length: requestCount }, (_, index) => `n${index}`),
      );
      expect(calls.server + calls.replica).toBe(requestCount);
      // Random spread: all 40 on one side has a chance of 2^-39.
      expect(calls.server).toBeGreaterThan(0);
      expect(calls.replica).toBeGreaterThan(0);
      expect(replies.filter((reply) => reply.servedBy === 'server')).toHaveLength(calls.server);
    } finally {
      await replica.close();
    }
  });

  it('keeps namespaces apart: a server in another namespace does not answer', async () => {
    const otherNamespace = uniqueNamespace('bus-other');
    const otherServer = await connectTestBus(otherNamespace);
    try {
      let calls = 0;
      otherServer.serve(lookup, async () => {
        calls += 1;
        return { title: 'from the other install' };
      });
      await otherServer.nc.flush();

      const error = await catchBusError(client.request(lookup, { id: 'n-1' }));

      expect(error.code).toBe('unavailable');
      expect(calls).toBe(0);
      expect(otherServer.subject(lookup.subject)).toBe(`${otherNamespace}.notes.lookup`);
      expect(client.subject(lookup.subject)).toBe(`${NAMESPACE}.notes.lookup`);
    } finally {
      await otherServer.close();
    }
  });
});

describe('trace context', () => {
  // The caller continues a trace that arrived from outside (an HTTP traceparent, say), so the
  // trace id is known in advance and does not depend on the tracer provider recording spans.
  const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
  const incoming = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: '00f067aa0ba902b7',
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });

  it('continues the caller trace in the handler through W3C headers', async () => {
    const handlerTraceIds: (string | undefined)[] = [];
    const rawTraceparents: string[] = [];
    track(
      server.serve(lookup, async () => {
        handlerTraceIds.push(activeTraceId());
        return { title: 'traced' };
      }),
    );
    // A plain (non-queue) subscriber gets its own copy of the request, headers included.
    track(
      server.nc.subscribe(server.subject(lookup.subject), {
        callback: (_error, msg) => {
          rawTraceparents.push(msg.headers?.get('traceparent') ?? '');
        },
      }),
    );
    await server.nc.flush();

    let callerTraceId: string | undefined;
    await withSpan('caller', { parent: incoming }, async () => {
      callerTraceId = activeTraceId();
      await client.request(lookup, { id: 'n-1' });
    });
    await server.nc.flush();

    expect(callerTraceId).toBe(TRACE_ID);
    expect(handlerTraceIds).toEqual([TRACE_ID]);
    expect(rawTraceparents).toHaveLength(1);
    expect(rawTraceparents[0]).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
  });

  it("does not carry one request's trace into the next request", async () => {
    const handlerTraceIds: (string | undefined)[] = [];
    track(
      server.serve(lookup, async () => {
        handlerTraceIds.push(activeTraceId());
        return { title: 'untraced' };
      }),
    );
    await server.nc.flush();

    await withSpan('caller', { parent: incoming }, async () => {
      await client.request(lookup, { id: 'n-1' });
    });
    await client.request(lookup, { id: 'n-2' });

    // The second request must not inherit the first one's trace.
    expect(handlerTraceIds[0]).toBe(TRACE_ID);
    expect(handlerTraceIds[1]).not.toBe(TRACE_ID);
  });
});

describe('publish/subscribe', () => {
  it('delivers valid events and drops malformed ones', async () => {
    const received: { id: string }[] = [];
    track(
      server.subscribe(noteCreated.subject, noteCreated.payload, (payload) => {
        received.push(payload);
      }),
    );
    await server.nc.flush();

    const subject = client.subject(noteCreated.subject);
    client.nc.publish(subject, new TextEncoder().encode('not json'));
    client.nc.publish(subject, encodeJson({ id: '' }));
    client.nc.publish(subject, encodeJson({ other: 'field' }));
    client.publish(noteCreated.subject, noteCreated.payload, { id: 'note-1' });

    // One publisher, one subject: NATS keeps the order, so the malformed events were seen first.
    await waitFor(() => received.length > 0, { what: 'the valid event' });
    await server.nc.flush();
    expect(received).toEqual([{ id: 'note-1' }]);
  });

  it('refuses to publish an invalid event', async () => {
    const received: unknown[] = [];
    track(
      server.subscribe(noteCreated.subject, noteCreated.payload, (payload) => {
        received.push(payload);
      }),
    );
    await server.nc.flush();

    expect(() => client.publish(noteCreated.subject, noteCreated.payload, { id: '' })).toThrow();
    client.publish(noteCreated.subject, noteCreated.payload, { id: 'note-2' });

    await waitFor(() => received.length > 0, { what: 'the valid event' });
    await server.nc.flush();
    expect(received).toEqual([{ id: 'note-2' }]);
  });
});

describe('connection state', () => {
  it('reports connected until closed', async () => {
    const bus = await connectTestBus(NAMESPACE);
    expect(bus.isConnected()).toBe(true);
    await bus.close();
    expect(bus.isConnected()).toBe(false);
    // Closing an already closed bus is harmless (a second SIGTERM, say).
    await bus.close();
  });

  it('fails requests on a closed bus as unavailable', async () => {
    const bus = await connectTestBus(NAMESPACE);
    await bus.close();
    const error = await catchBusError(bus.request(lookup, { id: 'n-1' }));
    expect(error.code).toBe('unavailable');
    expect(error.message).toBe('the message bus is unavailable');
  });

  it('fails event stream calls on a closed bus as unavailable, as requests do', async () => {
    const bus = await connectTestBus(NAMESPACE);
    await bus.close();
    const stream = { stream: 'NOTES', subjects: 'notes.>', maxAgeMs: 60_000 };
    const reading = { stream: 'NOTES', subject: 'notes.x', schema: z.unknown(), afterSeq: 0 };
    for (const call of [
      () => ensureEventStream(bus, stream),
      () => lastEventSeq(bus, 'NOTES'),
      () => readEvents(bus, reading, () => {}),
    ]) {
      const error = await catchBusError(call());
      expect(error.code).toBe('unavailable');
      expect(error.message).toBe('the message bus is unavailable');
    }
  });
});

// On a NATS server of the test's own, killed as an outage would: the machine's stays up.
describe('a NATS outage', () => {
  // Far above what failing at once takes, far below the 5 s a request waits for its reply.
  const FAST_MS = 1_000;

  async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const started = performance.now();
    const value = await work();
    return { value, ms: performance.now() - started };
  }

  it('fails requests, publishes and event stream calls at once, naming the bus', async () => {
    const nats = await startPrivateNats();
    const bus = await connectTestBus(NAMESPACE, nats.url);
    try {
      await nats.stop();
      await waitFor(() => !bus.isConnected(), { what: 'the bus to see the outage' });

      for (const call of [
        () => bus.request(lookup, { id: 'n-1' }),
        () => publishWork(bus, noteCreated, { id: 'n-1' }, 'n-1'),
        () => lastEventSeq(bus, 'NOTES'),
      ]) {
        const { value: error, ms } = await timed(() => catchBusError(call()));
        expect(error.toInfo()).toEqual({
          code: 'unavailable',
          message: 'the message bus is unavailable',
        });
        expect(ms).toBeLessThan(FAST_MS);
      }
    } finally {
      await bus.close();
    }
  });

  it('fails a request in flight when the connection drops, without waiting out its timeout', async () => {
    const nats = await startPrivateNats();
    const serving = await connectTestBus(NAMESPACE, nats.url);
    const bus = await connectTestBus(NAMESPACE, nats.url);
    const gate = createGate();
    gates.push(gate);
    let received = () => {};
    const isReceived = new Promise<void>((resolve) => {
      received = resolve;
    });
    serving.serve(lookup, async () => {
      received();
      await gate.promise;
      return { title: 'too late' };
    });
    await serving.nc.flush();
    try {
      const pending = catchBusError(bus.request(lookup, { id: 'n-1' }, { timeoutMs: 30_000 }));
      await isReceived;

      const { value: error, ms } = await timed(async () => {
        await nats.stop();
        return pending;
      });

      expect(error.toInfo()).toEqual({
        code: 'unavailable',
        message: 'the message bus is unavailable',
      });
      expect(ms).toBeLessThan(FAST_MS);
    } finally {
      await bus.close();
      await serving.close();
    }
  });
});
