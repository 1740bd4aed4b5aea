import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { memoryAppend, schedulerSchedulesCreate, schedulesChanged } from '@jarvis/contracts';
import {
  NATS_URL,
  REDIS_URL,
  Stack,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConversation } from './scheduler-fixture';

// The scheduler as it runs in production, as a process (two, for replicas), killed with SIGKILL
// while reminders fall due: each must reach its conversation exactly once.

let db: TestDatabase;
let bus: Bus;
// Memory and the first scheduler replica; the second replica has a stack of its own.
let stack: Stack;
let replica: Stack | undefined;

const SCHEDULER_ENV = {
  // A killed process' claims are taken over this long (plus the spread) after it made them.
  SCHEDULER_LEASE_MS: '3000',
  SCHEDULER_CATCH_UP_SPREAD_MS: '1000',
};
// The replicas' test: a lease shorter than a burst takes to deliver, so that a replica keeps
// the leases of the runs waiting in its queue, or the other takes them over.
const REPLICAS_ENV = { SCHEDULER_LEASE_MS: '2000', SCHEDULER_CATCH_UP_SPREAD_MS: '0' };

beforeAll(async () => {
  db = await startTestDatabase();
  const env = {
    NATS_URL,
    REDIS_URL,
    NATS_NAMESPACE: uniqueNamespace('scheduler-kill'),
    LOG_LEVEL: 'warn',
    ...SCHEDULER_ENV,
  };
  stack = new Stack({ services: ['memory', 'scheduler'], databaseUrl: db.url, env });
  replica = new Stack({
    services: ['scheduler'],
    databaseUrl: db.url,
    env: { ...env, ...REPLICAS_ENV },
  });
  await stack.start();
  bus = await connectTestBus(env.NATS_NAMESPACE);
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await replica?.stop();
  await stack?.stop();
  await db?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Reminders for `users`, `perUser` each, falling due in `bursts` bursts `everyMs` apart from
// the answered first due time: each burst is many deliveries at once, which a kill can interrupt
// halfway.
async function createReminders(
  label: string,
  users: string[],
  perUser: number,
  timing: { bursts: number; everyMs: number },
): Promise<number> {
  const total = users.length * perUser;
  // The earliest burst first, so that it is all made before it falls due.
  const all = Array.from({ length: total }, (_, index) => index).sort(
    (a, b) => (a % timing.bursts) - (b % timing.bursts),
  );
  // Made for an hour ahead, then moved to a few seconds from now in one statement: making 1,000
  // through the bus takes from 10 s to over a minute on a busy 2-core machine, and the bursts
  // must all fall due after the last is made.
  const madeFor = Date.now() + 3600_000;
  // 25 requests at a time: the scheduler's pool, not the test, should set the pace.
  for (let start = 0; start < total; start += 25) {
    await Promise.all(
      all.slice(start, start + 25).map((index) =>
        bus.request(schedulerSchedulesCreate, {
          userId: users[index % users.length] ?? '',
          userTimeZone: 'UTC',
          schedule: {
            kind: 'once',
            at: new Date(madeFor + (index % timing.bursts) * timing.everyMs).toISOString(),
            action: { type: 'remind', text: `${label} ${index}` },
          },
        }),
      ),
    );
  }
  const firstAt = Date.now() + 3_000;
  await db.pool.query(
    `UPDATE scheduler.schedules
        SET at = at - make_interval(secs => $2), next_run_at = next_run_at - make_interval(secs => $2)
      WHERE user_id = ANY($1)`,
    [users, (madeFor - firstAt) / 1000],
  );
  // As the API announces a change: the engines set their wake-up to the first burst.
  bus.publish(schedulesChanged.subject, schedulesChanged.payload, {
    nextRunAt: new Date(firstAt).toISOString(),
  });
  return firstAt;
}

async function countRuns(users: string[], status?: string): Promise<number> {
  const { rows } = await db.pool.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM scheduler.runs
      WHERE user_id = ANY($1) AND ($2::text IS NULL OR status = $2)`,
    [users, status ?? null],
  );
  return rows[0]?.count ?? 0;
}

async function expectEachOnce(users: string[], label: string, perUser: number): Promise<void> {
  for (const userId of users) {
    const messages = await readConversation(bus, userId);
    const texts = messages.map((message) => message.content);
    expect(messages.every((message) => message.role === 'assistant')).toBe(true);
    expect(texts.filter((text) => text.startsWith(label))).toHaveLength(perUser);
    expect(new Set(texts).size).toBe(texts.length);
  }
}

function percentile(sorted: number[], share: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? Number.NaN;
}

async function latenessMs(users: string[]): Promise<{ p50: number; p95: number; max: number }> {
  const { rows } = await db.pool.query<{ ms: number }>(
    `SELECT extract(epoch FROM finished_at - scheduled_for) * 1000 AS ms FROM scheduler.runs
      WHERE user_id = ANY($1) ORDER BY 1`,
    [users],
  );
  const sorted = rows.map((row) => Number(row.ms));
  return { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), max: sorted.at(-1) ?? 0 };
}

describe('1,000 one-shot reminders due within a minute', () => {
  it('are each delivered exactly once while the scheduler is killed with SIGKILL twice', async () => {
    const users = Array.from({ length: 10 }, () => randomUUID());
    // Ten bursts of 100, six seconds apart: the last is due 54 s after the first.
    const timing = { bursts: 10, everyMs: 6_000 };
    const firstAt = await createReminders('kill', users, 100, timing);
    expect(await countRuns(users)).toBe(0);

    const firedAtKill: number[] = [];
    // As soon as the 3rd and the 7th burst are claimed: in the middle of their deliveries.
    for (const burst of [2, 6]) {
      const dueAt = new Date(firstAt + burst * timing.everyMs);
      await sleep(dueAt.getTime() - Date.now());
      await waitFor(
        async () => {
          const { rows } = await db.pool.query(
            'SELECT 1 FROM scheduler.runs WHERE user_id = ANY($1) AND scheduled_for = $2 LIMIT 1',
            [users, dueAt],
          );
          return rows.length > 0 || undefined;
        },
        { intervalMs: 5, what: `burst ${burst} claimed` },
      );
      await stack.killService('scheduler');
      firedAtKill.push(await countRuns(users, 'fired'));
      await sleep(1_000);
      await stack.startService('scheduler');
    }

    await waitFor(async () => (await countRuns(users, 'fired')) === 1_000 || undefined, {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'every reminder fired',
    });
    // Each kill came in the middle of the minute's deliveries.
    for (const fired of firedAtKill) {
      expect(fired).toBeGreaterThan(0);
      expect(fired).toBeLessThan(1_000);
    }
    expect(await countRuns(users)).toBe(1_000);
    await expectEachOnce(users, 'kill', 100);
    const taken = await db.pool.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM scheduler.runs WHERE user_id = ANY($1) AND attempts > 1`,
      [users],
    );
    console.info(
      `kill test: fired at the kills ${firedAtKill.join(', ')}; taken over after a kill ` +
        `${taken.rows[0]?.count}; lateness (ms) ${JSON.stringify(await latenessMs(users))}`,
    );
    // The kills left claimed runs behind, which the restarted process delivered.
    expect(taken.rows[0]?.count).toBeGreaterThan(0);
  }, 150_000);

  it('are each delivered exactly once by two replicas at once', async () => {
    await stack.stopService('scheduler');
    await stack.startService('scheduler', REPLICAS_ENV);
    await replica?.start();
    const users = Array.from({ length: 10 }, () => randomUUID());
    // Every append either replica sends: memory keeps one message per key, so only this tells
    // a second delivery of a run apart from none.
    const appends = new Map<string, number>();
    // Each connection answers to inboxes of its own prefix: which replicas sent them.
    const senders = new Set<string>();
    const subscription = bus.nc.subscribe(bus.subject(memoryAppend.subject), {
      callback: (_error, msg) => {
        const key = String(msg.json<{ idempotencyKey?: string }>().idempotencyKey);
        appends.set(key, (appends.get(key) ?? 0) + 1);
        senders.add(msg.reply?.split('.').slice(0, 2).join('.') ?? '');
      },
    });
    try {
      // Two bursts of 500, five seconds apart: a burst is more than one claim takes (200), so
      // both replicas claim part of it, and the runs a replica claimed wait in its delivery queue
      // longer than their lease, which it must keep renewing.
      await createReminders('replicas', users, 100, {
        bursts: 2,
        everyMs: 5_000,
      });

      await waitFor(async () => (await countRuns(users, 'fired')) === 1_000 || undefined, {
        timeoutMs: 60_000,
        intervalMs: 500,
        what: 'every reminder fired',
      });
      const { rows } = await db.pool.query<{ id: string }>(
        'SELECT id FROM scheduler.runs WHERE user_id = ANY($1)',
        [users],
      );
      expect(rows.map((run) => appends.get(`schedule-run:${run.id}`))).toEqual(
        Array(1_000).fill(1),
      );
      await expectEachOnce(users, 'replicas', 100);
      // No run was taken over: neither replica died, so each run was delivered by the replica
      // that claimed it, in its first attempt.
      const retaken = await db.pool.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM scheduler.runs WHERE user_id = ANY($1) AND attempts <> 1`,
        [users],
      );
      expect(retaken.rows[0]?.count).toBe(0);
      // Both replicas did part of the work.
      expect(senders.size).toBe(2);
      console.info(`replicas test: lateness (ms) ${JSON.stringify(await latenessMs(users))}`);
    } finally {
      subscription.unsubscribe();
    }
  }, 150_000);
});
