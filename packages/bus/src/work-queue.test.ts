import { defineEvent, type EventContract } from '@jarvis/contracts';
import { uniqueNamespace, waitFor } from '@jarvis/testkit';
import { type JetStreamManager, nanos } from 'nats';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Bus } from './bus';
import { encodeJson } from './codec';
import { connectTestBus } from './testing';
import {
  ensureWorkQueue,
  type Outcome,
  publishWork,
  startWorker,
  type Worker,
  type WorkQueueOptions,
} from './work-queue';

const NAMESPACE = uniqueNamespace('work');

const Job = z.object({ id: z.string().min(1) });
type Job = z.infer<typeof Job>;

type Delivered = { id: string; deliveryCount: number; at: number };

type Gate = { promise: Promise<void>; open(): void };

function createGate(): Gate {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const ACK: Outcome = { type: 'ack' };

let bus: Bus;
let jsm: JetStreamManager;
let queueCount = 0;
// Torn down after each test, in this order: blocked handlers released, workers stopped, extra
// connections closed, streams deleted.
let gates: Gate[] = [];
let workers: Worker[] = [];
let extraBuses: Bus[] = [];
let streams: string[] = [];

beforeAll(async () => {
  bus = await connectTestBus(NAMESPACE);
  jsm = await bus.nc.jetstreamManager();
});

afterEach(async () => {
  for (const gate of gates) gate.open();
  for (const worker of workers) await worker.stop();
  for (const extra of extraBuses) await extra.close();
  for (const stream of streams) await jsm.streams.delete(stream);
  gates = [];
  workers = [];
  extraBuses = [];
  streams = [];
});

afterAll(async () => {
  await bus?.close();
});

// Each test gets its own stream: a subject can belong to one stream only, and a fresh stream
// means no message of an earlier test can be redelivered into this one.
async function createQueue(
  overrides: Partial<WorkQueueOptions> = {},
): Promise<{ contract: EventContract<typeof Job>; options: WorkQueueOptions; stream: string }> {
  queueCount += 1;
  const contract = defineEvent(`jobs${queueCount}.run`, Job);
  const options: WorkQueueOptions = {
    stream: `JOBS_${queueCount}`,
    consumer: 'workers',
    ackWaitMs: 1_000,
    maxDeliver: 5,
    maxInFlight: 2,
    ...overrides,
  };
  await ensureWorkQueue(bus, contract, options);
  const stream = bus.streamName(options.stream);
  streams.push(stream);
  return { contract, options, stream };
}

async function startTrackedWorker(
  on: Bus,
  contract: EventContract<typeof Job>,
  options: WorkQueueOptions,
  handler: (payload: Job, deliveryCount: number) => Promise<Outcome>,
): Promise<Worker> {
  const worker = await startWorker(on, contract, options, (payload, delivery) =>
    handler(payload, delivery.deliveryCount),
  );
  workers.push(worker);
  return worker;
}

async function storedMessages(stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

// Nothing left to deliver or to wait an ack for: the queue is done with every message.
async function isQueueSettled(stream: string, consumer: string): Promise<boolean> {
  const info = await jsm.consumers.info(stream, consumer);
  return info.num_pending === 0 && info.num_ack_pending === 0;
}

describe('ensureWorkQueue', () => {
  it('creates a work-queue stream and a durable consumer, and updates them when called again', async () => {
    const { contract, options, stream } = await createQueue({ ackWaitMs: 1_000 });

    const streamInfo = await jsm.streams.info(stream);
    expect(stream).toBe(`${NAMESPACE.toUpperCase()}_JOBS_${queueCount}`);
    expect(streamInfo.config.subjects).toEqual([bus.subject(contract.subject)]);
    expect(streamInfo.config.retention).toBe('workqueue');

    await ensureWorkQueue(bus, contract, { ...options, ackWaitMs: 2_000, maxDeliver: 3 });

    const consumer = await jsm.consumers.info(stream, options.consumer);
    expect(consumer.config.ack_wait).toBe(nanos(2_000));
    expect(consumer.config.max_deliver).toBe(3);
  });
});

describe('work queue delivery', () => {
  it('processes a message once and removes it when acked', async () => {
    const { contract, options, stream } = await createQueue();
    const delivered: Delivered[] = [];
    await startTrackedWorker(bus, contract, options, async (payload, deliveryCount) => {
      delivered.push({ id: payload.id, deliveryCount, at: Date.now() });
      return ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');

    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    expect(delivered.map(({ id, deliveryCount }) => ({ id, deliveryCount }))).toEqual([
      { id: 'job-1', deliveryCount: 1 },
    ]);
    expect(await storedMessages(stream)).toBe(0);
  });

  it('stores a message published twice with the same id only once', async () => {
    const { contract, options, stream } = await createQueue();

    await publishWork(bus, contract, { id: 'job-1' }, 'msg-1');
    await publishWork(bus, contract, { id: 'job-1' }, 'msg-1');
    await publishWork(bus, contract, { id: 'job-2' }, 'msg-2');
    expect(await storedMessages(stream)).toBe(2);

    const delivered: string[] = [];
    await startTrackedWorker(bus, contract, options, async (payload) => {
      delivered.push(payload.id);
      return ACK;
    });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'both acks' });
    expect(delivered.sort()).toEqual(['job-1', 'job-2']);
  });

  it('refuses to publish work that breaks the contract', async () => {
    const { contract, stream } = await createQueue();

    await expect(publishWork(bus, contract, { id: '' }, 'bad-1')).rejects.toThrow();
    expect(await storedMessages(stream)).toBe(0);
  });

  it('redelivers a message the handler asked to retry', async () => {
    const { contract, options, stream } = await createQueue();
    const delivered: Delivered[] = [];
    await startTrackedWorker(bus, contract, options, async (payload, deliveryCount) => {
      delivered.push({ id: payload.id, deliveryCount, at: Date.now() });
      return deliveryCount === 1 ? { type: 'retry', delayMs: 100 } : ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');

    await waitFor(() => delivered.length === 2, { what: 'the redelivery' });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    expect(delivered.map(({ deliveryCount }) => deliveryCount)).toEqual([1, 2]);
    expect(delivered.map(({ id }) => id)).toEqual(['job-1', 'job-1']);
  });

  it('drops a message the handler asked to drop', async () => {
    const { contract, options, stream } = await createQueue();
    const delivered: string[] = [];
    await startTrackedWorker(bus, contract, options, async (payload) => {
      delivered.push(payload.id);
      return payload.id === 'poison' ? { type: 'drop' } : ACK;
    });

    await publishWork(bus, contract, { id: 'poison' }, 'poison');
    await publishWork(bus, contract, { id: 'fine' }, 'fine');

    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'both outcomes' });
    const consumer = await jsm.consumers.info(stream, options.consumer);
    expect(consumer.num_redelivered).toBe(0);
    expect(delivered).toEqual(['poison', 'fine']);
    expect(await storedMessages(stream)).toBe(0);
  });

  it('redelivers a message whose handler threw, after a back-off', async () => {
    const { contract, options, stream } = await createQueue();
    const delivered: Delivered[] = [];
    await startTrackedWorker(bus, contract, options, async (payload, deliveryCount) => {
      delivered.push({ id: payload.id, deliveryCount, at: Date.now() });
      if (deliveryCount === 1) throw new Error('flaky dependency');
      return ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');

    await waitFor(() => delivered.length === 2, { what: 'the redelivery' });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    const [first, second] = delivered;
    expect(first?.deliveryCount).toBe(1);
    expect(second?.deliveryCount).toBe(2);
    // The first failure backs off one second before the next attempt.
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('terminates a malformed message instead of redelivering it', async () => {
    const { contract, options, stream } = await createQueue();
    const delivered: string[] = [];
    await startTrackedWorker(bus, contract, options, async (payload) => {
      delivered.push(payload.id);
      return ACK;
    });

    const js = bus.nc.jetstream();
    const subject = bus.subject(contract.subject);
    await js.publish(subject, new TextEncoder().encode('not json'));
    await js.publish(subject, encodeJson({ id: '' }));
    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');

    await waitFor(() => delivered.length === 1, { what: 'the valid message' });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'every outcome' });
    const consumer = await jsm.consumers.info(stream, options.consumer);
    // Terminated, not left to time out: nothing is waiting for an ack and nothing came back.
    expect(consumer.num_redelivered).toBe(0);
    expect(consumer.delivered.consumer_seq).toBe(3);
    expect(delivered).toEqual(['job-1']);
    expect(await storedMessages(stream)).toBe(0);
  });

  it('never works on more than maxInFlight messages at once', async () => {
    const { contract, options, stream } = await createQueue({ maxInFlight: 2 });
    const gate = createGate();
    gates.push(gate);
    let active = 0;
    let maxActive = 0;
    let done = 0;
    await startTrackedWorker(bus, contract, options, async () => {
      active += 1;
      maxActive = Math.max(maxActive, active);
      await gate.promise;
      active -= 1;
      done += 1;
      return ACK;
    });

    for (let index = 0; index < 6; index += 1) {
      await publishWork(bus, contract, { id: `job-${index}` }, `job-${index}`);
    }
    await waitFor(() => active === 2, { what: 'two handlers at work' });
    // A worker ignoring its limit would start a third handler within this window.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(active).toBe(2);
    gate.open();

    await waitFor(() => done === 6, { what: 'all six messages' });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'all acks' });
    expect(maxActive).toBe(2);
  });
});

describe('worker failure and shutdown', () => {
  it('hands the message of a worker that died to another worker after ackWait', async () => {
    const { contract, options, stream } = await createQueue({ ackWaitMs: 1_000 });
    const doomed = await connectTestBus(NAMESPACE);
    extraBuses.push(doomed);
    const stuck = createGate();
    gates.push(stuck);
    const firstDeliveries: Delivered[] = [];
    await startTrackedWorker(doomed, contract, options, async (payload, deliveryCount) => {
      firstDeliveries.push({ id: payload.id, deliveryCount, at: Date.now() });
      await stuck.promise;
      return ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');
    await waitFor(() => firstDeliveries.length === 1, { what: 'the first delivery' });

    // The process dies mid-work: its connection goes away without an ack or a nak.
    await doomed.nc.close();

    const redeliveries: Delivered[] = [];
    await startTrackedWorker(bus, contract, options, async (payload, deliveryCount) => {
      redeliveries.push({ id: payload.id, deliveryCount, at: Date.now() });
      return ACK;
    });

    await waitFor(() => redeliveries.length === 1, { what: 'the redelivery' });
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    const [first] = firstDeliveries;
    const [second] = redeliveries;
    expect(first).toMatchObject({ id: 'job-1', deliveryCount: 1 });
    expect(second).toMatchObject({ id: 'job-1', deliveryCount: 2 });
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(900);
  });

  it('keeps a live worker on a long job: the heartbeat stops redelivery', async () => {
    const { contract, options, stream } = await createQueue({ ackWaitMs: 1_000 });
    const gate = createGate();
    gates.push(gate);
    const delivered: number[] = [];
    await startTrackedWorker(bus, contract, options, async (_payload, deliveryCount) => {
      delivered.push(deliveryCount);
      await gate.promise;
      return ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');
    await waitFor(() => delivered.length === 1, { what: 'the first delivery' });
    // Over two ack waits: without the in-progress heartbeat JetStream would have redelivered.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    gate.open();

    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    expect(delivered).toEqual([1]);
  });

  it('stop() waits for the handlers in flight, whose acks still count', async () => {
    const { contract, options, stream } = await createQueue();
    const gate = createGate();
    gates.push(gate);
    const events: string[] = [];
    const worker = await startTrackedWorker(bus, contract, options, async () => {
      events.push('handler started');
      await gate.promise;
      events.push('handler finished');
      return ACK;
    });

    await publishWork(bus, contract, { id: 'job-1' }, 'job-1');
    await waitFor(() => events.includes('handler started'), { what: 'the handler' });

    const stopped = worker.stop().then(() => events.push('stopped'));
    // Long enough for a stop() that does not wait to have resolved.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(events).toEqual(['handler started']);

    gate.open();
    await stopped;
    expect(events).toEqual(['handler started', 'handler finished', 'stopped']);
    await waitFor(() => isQueueSettled(stream, options.consumer), { what: 'the ack' });
    expect(await storedMessages(stream)).toBe(0);
  });
});
