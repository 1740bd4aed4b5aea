import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Bus, ensureUserEventStream, publishUserEvent } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { notificationsChannelsPut } from '@jarvis/contracts';
import { type RecordedRequest, reminderFired, startHttpRecorder, waitFor } from '@jarvis/testkit';
import { z } from 'zod';
import { prepareBenchStack } from '../bench-stack';
import { RESULTS_DIR } from '../paths';
import { percentiles } from '../percentiles';
import { cpuMsPerTurn, readCpuSeconds } from '../proc';

// `make bench` (notifications): how long a reminder takes from its user event to the request of
// the user's channel. The tools service runs as its own process from its main.ts, with
// production's settings; the bench publishes `schedule_fired` events of fired reminders to
// USER_EVENTS as the scheduler does (publishUserEvent, the run's key as the message id), and each
// user's channel is a signed webhook to a local HTTP server in the bench, set up through
// notifications.channels.put as the API does (OUTBOUND_ALLOWED_HOSTS lets it reach 127.0.0.1).
// Two loads: a steady trickle, then a burst published all at once. Latency is from the call that
// publishes an event to the webhook request's arrival, both on the bench's clock. Every request's
// signature is checked, and every event must arrive exactly once.

const Settings = z.object({
  // A PostgreSQL server; the bench makes a database of its own there and drops it at the end.
  // Without it, the embedded one (PGlite in the bench's process).
  DATABASE_URL: z.string().url().optional(),
  // Users, each with one webhook channel; events are dealt to them in turn.
  BENCH_USERS: z.coerce.number().int().min(1).default(100),
  // The trickle: this many events, this many a second.
  BENCH_TRICKLE: z.coerce.number().int().min(1).default(200),
  BENCH_TRICKLE_RATE: z.coerce.number().positive().default(20),
  // The burst: this many events published at once.
  BENCH_BURST: z.coerce.number().int().min(1).default(1_000),
  // How long to go on listening once every event of a load has arrived, for second copies.
  BENCH_SETTLE_SECONDS: z.coerce.number().min(0).default(10),
});
const settings = Settings.parse(process.env);
const RESULTS = resolve(RESULTS_DIR, 'notifications.json');
const DELIVERY_TIMEOUT_MS = 300_000;

type Published = { id: string; userIndex: number; at: number };

const { database, namespace, stack } = await prepareBenchStack('bench-notifications', ['tools'], {
  env: { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' },
});
const receiver = await startHttpRecorder();
let bus: Bus | undefined;

try {
  await stack.start();
  bus = await connectTestBus(namespace);
  const tools = stack.process('tools');
  if (!tools) throw new Error('the stack has no tools process');
  const connectedBus = bus;
  // The tools service has made the stream and its consumer by the time it is ready; ensured here
  // too so that a change there fails loudly rather than losing the first events.
  await ensureUserEventStream(connectedBus);

  // 1. One signed webhook channel per user, each with a path and a secret of its own.
  const users = Array.from({ length: settings.BENCH_USERS }, () => ({
    id: randomUUID(),
    secret: randomBytes(24).toString('hex'),
  }));
  for (const [index, user] of users.entries()) {
    await connectedBus.request(notificationsChannelsPut, {
      userId: user.id,
      userTimeZone: 'UTC',
      channel: { type: 'webhook', url: `${receiver.url}/hooks/${index}`, secret: user.secret },
    });
  }

  // Whether a request's signature holds for the secret of the user whose path it came to.
  const isSigned = (request: RecordedRequest): boolean => {
    const user = users[Number(request.path.match(/^\/hooks\/(\d+)$/)?.[1] ?? Number.NaN)];
    const timestamp = request.headers['x-jarvis-timestamp'];
    const signature = request.headers['x-jarvis-signature'];
    if (!user || typeof timestamp !== 'string' || typeof signature !== 'string') return false;
    const expected = `sha256=${createHmac('sha256', user.secret).update(`${timestamp}.${request.body}`).digest('hex')}`;
    return (
      expected.length === signature.length &&
      timingSafeEqual(Buffer.from(expected), Buffer.from(signature))
    );
  };
  // The event id in a request's body (Jarvis's own format), read once per request.
  const eventIds = new WeakMap<RecordedRequest, string | null>();
  const eventIdOf = (request: RecordedRequest): string | null => {
    const known = eventIds.get(request);
    if (known !== undefined) return known;
    let id: string | null = null;
    try {
      const parsed = z.object({ id: z.string() }).safeParse(JSON.parse(request.body));
      id = parsed.success ? parsed.data.id : null;
    } catch {
      // Not JSON: counted as foreign below.
    }
    eventIds.set(request, id);
    return id;
  };

  const publish = async (index: number, userIndex: number): Promise<Published> => {
    const user = users[userIndex];
    if (!user) throw new Error(`no user ${userIndex}`);
    const { id, event } = reminderFired(`Reminder ${index}: the meeting starts now`);
    const at = Date.now();
    await publishUserEvent(connectedBus, user.id, id, event);
    return { id, userIndex, at };
  };

  // Waits until every published event has reached its channel; answers when the last arrived.
  const awaitDelivered = async (name: string, published: Published[], firstRequest: number) => {
    await waitFor(
      () => {
        const seen = new Set(receiver.requests.slice(firstRequest).map(eventIdOf));
        return published.every((event) => seen.has(event.id)) || undefined;
      },
      { timeoutMs: DELIVERY_TIMEOUT_MS, intervalMs: 100, what: `every event of the ${name}` },
    );
    return Math.max(...receiver.requests.slice(firstRequest).map((request) => request.receivedAt));
  };

  // Listens on for second copies, then the figures of one load, from the requests that came
  // after `firstRequest`.
  const measure = async (published: Published[], firstRequest: number, lastArrival: number) => {
    await sleep(settings.BENCH_SETTLE_SECONDS * 1_000);
    const requests = receiver.requests.slice(firstRequest);
    const ids = new Map(published.map((event) => [event.id, event]));
    const perEvent = new Map<string, RecordedRequest[]>();
    let foreign = 0;
    for (const request of requests) {
      const id = eventIdOf(request);
      if (id === null || !ids.has(id)) {
        foreign += 1;
        continue;
      }
      perEvent.set(id, [...(perEvent.get(id) ?? []), request]);
    }
    const wrongChannel = published.filter((event) =>
      perEvent.get(event.id)?.some((request) => request.path !== `/hooks/${event.userIndex}`),
    ).length;
    // Where the time goes: until the event consumer stored the delivery (created_at, on the
    // same machine's clock), and from there to the channel's request (the worker's part).
    const { rows: stored } = await database.pool.query<{ event_id: string; created_ms: number }>(
      `SELECT event_id, extract(epoch FROM created_at) * 1000 AS created_ms
         FROM tools.notification_deliveries WHERE event_id = ANY($1)`,
      [published.map((event) => event.id)],
    );
    const storedAt = new Map(stored.map((row) => [row.event_id, Number(row.created_ms)]));
    const stage = (from: (event: Published) => number, to: (event: Published) => number) =>
      percentiles(published.map((event) => Math.round(to(event) - from(event))));
    const arrivedAt = (event: Published) => perEvent.get(event.id)?.[0]?.receivedAt ?? Number.NaN;
    const storedAtOf = (event: Published) => storedAt.get(event.id) ?? Number.NaN;
    const firstPublished = Math.min(...published.map((event) => event.at));
    return {
      events: published.length,
      delivered: perEvent.size,
      // Events whose channel got more than one request, and the requests beyond the first.
      duplicatedEvents: [...perEvent.values()].filter((copies) => copies.length > 1).length,
      extraRequests: [...perEvent.values()].reduce((sum, copies) => sum + copies.length - 1, 0),
      badSignatures: requests.filter((request) => !isSigned(request)).length,
      wrongChannel,
      // Requests with no event of this load in them (a late copy of an earlier load's).
      foreign,
      latencyMs: stage((event) => event.at, arrivedAt),
      storedMs: stage((event) => event.at, storedAtOf),
      storedToRequestMs: stage(storedAtOf, arrivedAt),
      publishedOverMs: Math.max(...published.map((event) => event.at)) - firstPublished,
      allDeliveredMs: lastArrival - firstPublished,
    };
  };

  const summarize = (name: string, figures: Awaited<ReturnType<typeof measure>>) => {
    const { latencyMs: latency, storedMs: stored, storedToRequestMs: sending } = figures;
    return (
      `${name}: ${figures.events} events published over ${figures.publishedOverMs} ms, ${figures.delivered} delivered, all within ${figures.allDeliveredMs} ms of the first\n` +
      `  latency event -> channel request: p50 ${latency.p50} ms, p95 ${latency.p95} ms, max ${latency.max} ms\n` +
      `    of which event -> delivery stored: p50 ${stored.p50} ms, p95 ${stored.p95} ms; stored -> request: p50 ${sending.p50} ms, p95 ${sending.p95} ms\n` +
      `  duplicated events ${figures.duplicatedEvents} (${figures.extraRequests} extra requests), bad signatures ${figures.badSignatures}, to the wrong channel ${figures.wrongChannel}, foreign requests ${figures.foreign}\n`
    );
  };

  const loadAtStart = loadavg().map((value) => Math.round(value * 100) / 100);
  const stackPids = { tools: tools.child.pid };

  // 2. The trickle: each event at its own instant on a fixed grid, not after the previous
  // publish returned, so a slow acknowledgement does not slow the rate.
  const trickleFrom = receiver.requests.length;
  const trickleStart = performance.now() + 100;
  const pending: Promise<Published>[] = [];
  for (let index = 0; index < settings.BENCH_TRICKLE; index += 1) {
    const due = trickleStart + (index * 1_000) / settings.BENCH_TRICKLE_RATE;
    await sleep(Math.max(0, due - performance.now()));
    pending.push(publish(index, index % users.length));
  }
  const trickleEvents = await Promise.all(pending);
  const trickleLast = await awaitDelivered('trickle', trickleEvents, trickleFrom);
  const trickle = await measure(trickleEvents, trickleFrom, trickleLast);
  process.stdout.write(
    summarize(
      `trickle at ${settings.BENCH_TRICKLE_RATE}/s over ${users.length} users' webhooks`,
      trickle,
    ),
  );

  // 3. The burst: every event published at once.
  const loadAtBurst = loadavg().map((value) => Math.round(value * 100) / 100);
  const burstFrom = receiver.requests.length;
  const cpuBefore = await readCpuSeconds(stackPids, ['postgres', 'nats-server', 'redis-server']);
  const burstEvents = await Promise.all(
    Array.from({ length: settings.BENCH_BURST }, (_, index) =>
      publish(settings.BENCH_TRICKLE + index, index % users.length),
    ),
  );
  const burstLast = await awaitDelivered('burst', burstEvents, burstFrom);
  // Up to the last arrival (and the poll that saw it): the work of the burst, not of the quiet
  // that follows. The machine's servers count all of their work, other runs' included.
  const cpuAfter = await readCpuSeconds(stackPids, ['postgres', 'nats-server', 'redis-server']);
  const burstCpu = cpuMsPerTurn(cpuBefore, cpuAfter, burstEvents.length);
  const burst = await measure(burstEvents, burstFrom, burstLast);
  process.stdout.write(
    `${summarize('burst', burst)}  CPU ms per event: ${JSON.stringify(burstCpu)}\n`,
  );

  // The tools service's own record: one delivery per event, each sent at the first attempt
  // unless the channel (here always answering 200) was slower than the send timeout.
  const { rows: deliveries } = await database.pool.query<{
    status: string;
    deliveries: number;
    attempts: number;
  }>(
    `SELECT status, count(*)::int AS deliveries, sum(attempts)::int AS attempts
       FROM tools.notification_deliveries GROUP BY status ORDER BY status`,
  );
  process.stdout.write(
    `deliveries: ${deliveries.map((row) => `${row.status} ${row.deliveries} (${row.attempts} attempts)`).join(', ')}\n`,
  );

  const report = {
    date: new Date().toISOString(),
    database: database.engine === 'server' ? 'postgres' : 'embedded (PGlite)',
    loadAverageAtStart: loadAtStart,
    loadAverageAtBurst: loadAtBurst,
    users: users.length,
    trickle: { ratePerSecond: settings.BENCH_TRICKLE_RATE, ...trickle },
    burst: { ...burst, cpuMsPerEvent: burstCpu },
    deliveries,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);

  const isWrong = [trickle, burst].some(
    (figures) =>
      figures.delivered !== figures.events ||
      figures.duplicatedEvents > 0 ||
      figures.badSignatures > 0 ||
      figures.wrongChannel > 0 ||
      figures.foreign > 0,
  );
  if (isWrong || deliveries.some((row) => row.status !== 'sent')) {
    throw new Error(
      'an event was lost, sent twice, unsigned, to the wrong channel, late or not recorded as sent (see above)',
    );
  }
} finally {
  await bus?.close();
  await stack.stop();
  await receiver.close();
  await database.stop();
}
