import { createHash, randomUUID } from 'node:crypto';
import { type Bus, BusError, describeZodError, publishWork } from '@jarvis/bus';
import {
  ModelUsageEvent,
  modelUsageRecorded,
  USAGE_BATCH_MAX,
  type UsagePurpose,
} from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { type AdmitVerdict, admitRequest, countUsage, RATE_WINDOW_MS } from './usage-counters';
import type { UsageLimits } from './usage-env';
import { fromNanos, nextUtcMidnight, toNanos, utcDay } from './usage-units';

export type UsageEvent = ModelUsageEvent;

export type UsageMeter = {
  // Before a call: throws BusError('budget_exceeded') when the user has used up a daily budget or
  // started as many chat/utility calls as the rate allows in the last minute. Embeddings and
  // calls without a user are always admitted (and still counted). The daily budgets are charged
  // after the call, so calls already running when one runs out may finish past it.
  admit(userId: string | undefined, purpose: UsagePurpose): Promise<void>;
  // After a call: counts it against the user's day in Redis and publishes its usage event for the
  // rollup. Calls recorded within SEND_AFTER_MS are sent together (one Redis write, one stream
  // message for all their events), and a user's are sent before that user's next admit's check, on
  // the same connection, so that check sees them even when the caller does not wait. Never throws:
  // the answer must not fail because accounting did. What does not land at once is retried in the
  // background until it does, and logged at error if it never does (overflow, shutdown), with the
  // whole event, so no usage is lost silently.
  record(event: UsageEvent): Promise<void>;
  // Tries what is still pending once more; run before the bus and Redis close.
  stop(): Promise<void>;
};

export type UsageMeterDeps = {
  redis: Redis;
  bus: Bus;
  limits: UsageLimits;
  logger: Logger;
  // Length of the request-rate window; tests shorten it.
  rateWindowMs?: number;
};

// One try of either step waits at most this long, so a hung Redis or NATS delays an answer by
// little. Both steps are idempotent, so a try that lands after its timeout does no harm.
const ATTEMPT_TIMEOUT_MS = 2_000;
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;
// Events held for retry; past this the oldest are logged and dropped rather than growing the
// heap without bound during a long outage.
const PENDING_MAX = 10_000;
// Calls recorded within this long are sent together. Under load every send costs two socket
// writes (Redis, NATS) that wake Redis and NATS, and the acks to read: sent per call, they made
// about a tenth of the gateway's CPU at 500 calls a second (gateway-bench.ts). A crash loses at
// most this much accounting more than it would sent at once.
const SEND_AFTER_MS = 20;

type Pending = {
  event: z.output<typeof ModelUsageEvent>;
  isCounted: boolean;
  isPublished: boolean;
  attempts: number;
  nextAttemptAt: number;
};

type Batch = {
  items: Pending[];
  done: Promise<void>;
  settle(): void;
  sendTimer: NodeJS.Timeout;
};

export function createUsageMeter(deps: UsageMeterDeps): UsageMeter {
  const { redis, bus, limits, logger } = deps;
  const windowMs = deps.rateWindowMs ?? RATE_WINDOW_MS;
  const pending: Pending[] = [];
  let timer: NodeJS.Timeout | undefined;
  let retrying: Promise<void> | undefined;
  let isStopped = false;
  // Recordings not yet landed: callers need not wait for them, stop() does.
  const inflight = new Set<Promise<void>>();
  // Recordings not yet sent, and what settles their callers' promises once they are.
  let batch: Batch | undefined;

  // One try of every item, counts first, then events: Redis's auto-pipelining puts the counts in
  // one write, and the events not yet published go out as one stream message (per
  // USAGE_BATCH_MAX), which the rollup applies in one statement: per call, a stream message, its
  // ack, its delivery and four round trips to Postgres were most of what accounting cost.
  async function attempt(items: Pending[]): Promise<void> {
    for (const item of items) item.attempts += 1;
    await Promise.all(items.map(count));
    const unpublished = items.filter((item) => !item.isPublished);
    const messages: Pending[][] = [];
    for (let start = 0; start < unpublished.length; start += USAGE_BATCH_MAX) {
      messages.push(unpublished.slice(start, start + USAGE_BATCH_MAX));
    }
    await Promise.all(messages.map(publish));
  }

  async function count(item: Pending): Promise<void> {
    const { event } = item;
    if (item.isCounted || !event.userId) return;
    try {
      const call = { ...event, userId: event.userId };
      await withTimeout(countUsage(redis, bus.namespace, call, new Date()), 'redis');
      item.isCounted = true;
    } catch (error) {
      logger.warn({ err: error, eventId: event.id }, 'usage not counted in redis yet');
    }
  }

  // One stream message of these items' events.
  async function publish(items: Pending[]): Promise<void> {
    const events = items.map((item) => item.event);
    const ids = events.map((event) => event.id);
    // Named by its events: the same message published again (a timeout that did land) is
    // dropped by JetStream; a retry that groups them otherwise is left to the rollup's
    // per-event markers.
    const messageId = createHash('sha1').update(ids.join(',')).digest('hex');
    try {
      await withTimeout(publishWork(bus, modelUsageRecorded, { events }, messageId), 'nats');
      for (const item of items) item.isPublished = true;
    } catch (error) {
      logger.warn({ err: error, eventIds: ids }, 'usage events not published yet');
    }
  }

  // Sends what was recorded since the last send: SEND_AFTER_MS after the first of it, or sooner
  // when an admit of one of its users needs the counts to be ahead of it.
  function send(): void {
    if (!batch) return;
    const { items, settle, sendTimer } = batch;
    batch = undefined;
    clearTimeout(sendTimer);
    const work = attempt(items).then(() => {
      for (const item of items) {
        if (isDone(item)) continue;
        if (isStopped) logLost(item);
        else hold(item);
      }
    });
    inflight.add(work);
    void work.finally(() => {
      inflight.delete(work);
      settle();
    });
  }

  function isDone(item: Pending): boolean {
    return (item.isCounted || !item.event.userId) && item.isPublished;
  }

  function hold(item: Pending): void {
    item.nextAttemptAt =
      Date.now() + Math.min(RETRY_BASE_MS * 2 ** (item.attempts - 1), RETRY_MAX_MS);
    pending.push(item);
    while (pending.length > PENDING_MAX) {
      const dropped = pending.shift();
      logger.error({ event: dropped?.event }, 'usage event dropped: too many pending retries');
    }
    schedule();
  }

  function schedule(): void {
    if (timer || retrying || isStopped || pending.length === 0) return;
    const next = Math.min(...pending.map((item) => item.nextAttemptAt));
    timer = setTimeout(
      () => {
        timer = undefined;
        retrying = retryDue().finally(() => {
          retrying = undefined;
          schedule();
        });
      },
      Math.max(next - Date.now(), 0),
    );
    // Pending retries alone must not keep a finished process alive; stop() flushes them.
    timer.unref();
  }

  async function retryDue(): Promise<void> {
    const now = Date.now();
    const due = pending.filter((item) => item.nextAttemptAt <= now);
    for (const item of due) pending.splice(pending.indexOf(item), 1);
    await attempt(due);
    for (const item of due) {
      if (isDone(item)) logger.info({ eventId: item.event.id }, 'usage recorded after retry');
      else if (isStopped) pending.push(item);
      else hold(item);
    }
  }

  function openBatch(): Batch {
    let settle = () => {};
    const done = new Promise<void>((resolve) => {
      settle = resolve;
    });
    return { items: [], settle, done, sendTimer: setTimeout(send, SEND_AFTER_MS) };
  }

  function logLost(item: Pending): void {
    logger.error(
      { event: item.event, isCounted: item.isCounted, isPublished: item.isPublished },
      'usage event could not be recorded before shutdown',
    );
  }

  return {
    async admit(userId, purpose) {
      // Embeddings are counted but never refused: memory indexes every message with them, and
      // a user over budget must still find what they said today.
      if (!userId || purpose === 'embed') return;
      const admitLimits = {
        dailyTokens: limits.dailyTokens,
        dailyCostNanos: toNanos(limits.dailyCostUsd),
        requestsPerWindow: limits.requestsPerMinute,
        windowMs,
      };
      const isUnlimited =
        admitLimits.dailyTokens === 0 &&
        admitLimits.dailyCostNanos === 0 &&
        admitLimits.requestsPerWindow === 0;
      if (isUnlimited) return;
      if (batch?.items.some((item) => item.event.userId === userId)) send();
      const now = new Date();
      let verdict: AdmitVerdict;
      try {
        verdict = await admitRequest(
          redis,
          bus.namespace,
          userId,
          utcDay(now),
          admitLimits,
          randomUUID(),
        );
      } catch (error) {
        // Refuse rather than let calls through unmetered: the budgets exist to bound spending.
        logger.warn({ err: error }, 'usage budget could not be checked');
        throw new BusError('unavailable', 'model-gateway cannot check usage budgets right now');
      }
      if (verdict.type !== 'ok') {
        throw new BusError('budget_exceeded', describeRefusal(verdict, limits, windowMs, now));
      }
    },

    async record(event) {
      const parsed = z.safeParse(ModelUsageEvent, event);
      if (!parsed.success) {
        // A bug in the caller: retrying cannot fix it, so say so loudly, with the event.
        const problem = describeZodError(parsed.error);
        logger.error({ event, problem }, 'usage event is malformed; not recorded');
        return;
      }
      const item: Pending = {
        event: parsed.data,
        isCounted: false,
        isPublished: false,
        attempts: 0,
        nextAttemptAt: 0,
      };
      batch ??= openBatch();
      batch.items.push(item);
      await batch.done;
    },

    async stop() {
      isStopped = true;
      send();
      await Promise.all(inflight);
      clearTimeout(timer);
      timer = undefined;
      await retrying;
      const left = pending.splice(0);
      await attempt(left);
      for (const item of left) if (!isDone(item)) logLost(item);
    },
  };
}

function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timeout: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timeout = setTimeout(
      () => reject(new Error(`${what} did not answer in ${ATTEMPT_TIMEOUT_MS} ms`)),
      ATTEMPT_TIMEOUT_MS,
    );
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timeout));
}

// Which limit, how much of it is used, and when it frees up: what the user needs to decide to
// wait, or to raise the limit.
function describeRefusal(
  verdict: Exclude<AdmitVerdict, { type: 'ok' }>,
  limits: UsageLimits,
  windowMs: number,
  now: Date,
): string {
  const resetsAt = nextUtcMidnight(now).toISOString();
  switch (verdict.type) {
    case 'tokens':
      return (
        `daily token budget used up: ${formatCount(verdict.used)} of ` +
        `${formatCount(limits.dailyTokens)} tokens today; it resets at ${resetsAt}`
      );
    case 'cost':
      return (
        `daily cost budget used up: ${formatUsd(fromNanos(verdict.usedNanos))} of ` +
        `${formatUsd(limits.dailyCostUsd)} today; it resets at ${resetsAt}`
      );
    case 'rate':
      return (
        `request rate limit reached: ${verdict.count} of ${limits.requestsPerMinute} model ` +
        `requests in the last ${describeWindow(windowMs)}; try again in ` +
        `${Math.max(Math.ceil(verdict.retryAfterMs / 1_000), 1)} s`
      );
  }
}

function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

function formatUsd(value: number): string {
  return `$${value.toFixed(value >= 1 ? 2 : 4)}`;
}

function describeWindow(windowMs: number): string {
  return windowMs === RATE_WINDOW_MS ? 'minute' : `${windowMs / 1_000} s`;
}
