import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  memoryConversationsList,
  memoryMessagesList,
  type ScheduleFields,
  type ScheduleRun,
  schedulerSchedulesCreate,
  schedulerSchedulesRuns,
} from '@jarvis/contracts';
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

// The scheduler process stopped across due times and started again: each schedule's missed
// policy decides what runs, and its history holds every occurrence.

let db: TestDatabase;
let bus: Bus;
let stack: Stack;

beforeAll(async () => {
  db = await startTestDatabase();
  const namespace = uniqueNamespace('scheduler-downtime');
  stack = new Stack({
    services: ['memory', 'scheduler'],
    databaseUrl: db.url,
    env: {
      NATS_URL,
      REDIS_URL,
      NATS_NAMESPACE: namespace,
      LOG_LEVEL: 'warn',
      // Seen more than 2 s late, an occurrence was missed: the test's downtime is seconds long.
      SCHEDULER_MISSED_AFTER_MS: '2000',
    },
  });
  await stack.start();
  bus = await connectTestBus(namespace);
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await stack?.stop();
  await db?.stop();
});

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

async function create(userId: string, schedule: ScheduleFields): Promise<string> {
  const reply = await bus.request(schedulerSchedulesCreate, {
    userId,
    userTimeZone: 'UTC',
    schedule,
  });
  return reply.schedule.id;
}

// Oldest first, each as status or status:reason, once none is still being delivered.
async function history(userId: string, id: string, count: number): Promise<string[]> {
  const runs = await waitFor(
    async () => {
      const found: ScheduleRun[] = (
        await bus.request(schedulerSchedulesRuns, { userId, id, limit: 50 })
      ).runs;
      const isSettled = found.length >= count && found.every((run) => run.status !== 'running');
      return isSettled ? found : undefined;
    },
    { timeoutMs: 30_000, what: `${count} settled runs` },
  );
  return runs.reverse().map((run) => (run.reason ? `${run.status}:${run.reason}` : run.status));
}

async function reminderTexts(userId: string): Promise<string[]> {
  const { defaultConversationId } = await bus.request(memoryConversationsList, { userId });
  if (!defaultConversationId) return [];
  const { messages } = await bus.request(memoryMessagesList, {
    userId,
    conversationId: defaultConversationId,
    limit: 200,
  });
  return messages.map((message) => message.content).sort();
}

describe('a scheduler down across due times', () => {
  it('runs what each policy says when it is back, and records every occurrence', async () => {
    const userId = randomUUID();
    const hourly = (text: string, fields: Partial<ScheduleFields>): ScheduleFields => ({
      kind: 'interval',
      everyMinutes: 60,
      startAt: inMs(3_600_000),
      graceMinutes: 150,
      action: { type: 'remind', text },
      ...fields,
    });
    const soon = (text: string, fields: Partial<ScheduleFields>): ScheduleFields => ({
      kind: 'once',
      at: inMs(3_000),
      action: { type: 'remind', text },
      ...fields,
    });
    const ids = {
      skip: await create(userId, hourly('hourly skip', { missedPolicy: 'skip' })),
      runOnce: await create(userId, hourly('hourly run_once', { missedPolicy: 'run_once' })),
      runAll: await create(
        userId,
        hourly('hourly run_all', { missedPolicy: 'run_all', missedMaxRuns: 2 }),
      ),
      soonRunOnce: await create(userId, soon('soon run_once', {})),
      soonSkip: await create(userId, soon('soon skip', { missedPolicy: 'skip' })),
      soonNoGrace: await create(userId, soon('soon no grace', { graceMinutes: 0 })),
    };

    expect(await stack.stopService('scheduler')).toBe(0);
    // The hourly ones as if the machine had been off for six hours: their start and cursor are
    // moved back, the one thing a test cannot wait out.
    await db.pool.query(
      `UPDATE scheduler.schedules
          SET start_at = start_at - interval '6 hours 2 minutes',
              next_run_at = next_run_at - interval '6 hours 2 minutes'
        WHERE user_id = $1 AND kind = 'interval'`,
      [userId],
    );
    // The one-shot ones fall due while it is down, and are seen more than 2 s late.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(
      (await db.pool.query('SELECT 1 FROM scheduler.runs WHERE user_id = $1', [userId])).rowCount,
    ).toBe(0);
    await stack.startService('scheduler');

    // Occurrences 5 h 2 min, 4 h 2 min, ... 2 min ago: three past the grace window of 150 min.
    const pastGrace = Array(3).fill('missed:past_grace_window');
    expect(await history(userId, ids.skip, 6)).toEqual([
      ...pastGrace,
      ...Array(3).fill('skipped:missed_skip_policy'),
    ]);
    expect(await history(userId, ids.runOnce, 6)).toEqual([
      ...pastGrace,
      'skipped:caught_up_by_later_run',
      'skipped:caught_up_by_later_run',
      'fired',
    ]);
    expect(await history(userId, ids.runAll, 6)).toEqual([
      ...pastGrace,
      'skipped:missed_max_runs',
      'fired',
      'fired',
    ]);
    expect(await history(userId, ids.soonRunOnce, 1)).toEqual(['fired']);
    expect(await history(userId, ids.soonSkip, 1)).toEqual(['skipped:missed_skip_policy']);
    expect(await history(userId, ids.soonNoGrace, 1)).toEqual(['missed:past_grace_window']);
    expect(await reminderTexts(userId)).toEqual([
      'hourly run_all',
      'hourly run_all',
      'hourly run_once',
      'soon run_once',
    ]);
  }, 120_000);
});
