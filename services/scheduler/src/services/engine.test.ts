import { randomUUID } from 'node:crypto';
import { lastEventSeq, readEvents } from '@jarvis/bus';
import {
  memoryAppend,
  type ScheduleFields,
  type ScheduleRun,
  schedulerSchedulesCreate,
  schedulerSchedulesGet,
  schedulerSchedulesRuns,
  schedulerSchedulesSnooze,
  schedulesChanged,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listRuns } from '../repositories/runs-repository';
import { findSchedule } from '../repositories/schedules-repository';
import { type SchedulerFixture, startSchedulerFixture } from '../scheduler-fixture';
import { announceRun, idempotencyKeyOf } from './deliver';
import type { Engine } from './engine';

let fixture: SchedulerFixture;
let engines: Engine[] = [];

beforeAll(async () => {
  // Memory as its own process, where reminders are posted.
  fixture = await startSchedulerFixture('scheduler-engine', { services: ['memory'] });
}, 120_000);

afterEach(async () => {
  await Promise.all(engines.map((engine) => engine.stop()));
  engines = [];
});

afterAll(async () => {
  await fixture?.stop();
});

async function startEngine(settings = {}) {
  const engine = await fixture.startEngine(settings);
  engines.push(engine);
  return engine;
}

async function create(userId: string, schedule: ScheduleFields) {
  return (
    await fixture.clientBus.request(schedulerSchedulesCreate, {
      userId,
      userTimeZone: 'UTC',
      schedule,
    })
  ).schedule;
}

async function runsOf(userId: string, id: string): Promise<ScheduleRun[]> {
  return (await fixture.clientBus.request(schedulerSchedulesRuns, { userId, id, limit: 200 })).runs;
}

// Until none of the schedule's runs is still being delivered and it has at least `count`.
function settledRuns(userId: string, id: string, count: number): Promise<ScheduleRun[]> {
  return waitFor(
    async () => {
      const runs = await runsOf(userId, id);
      const isSettled = runs.length >= count && runs.every((run) => run.status !== 'running');
      return isSettled ? runs : undefined;
    },
    { timeoutMs: 20_000, what: `${count} settled runs of ${id}` },
  );
}

// Every memory.messages.append the scheduler sends, by idempotency key: memory keeps one message
// per key, so only this tells a second delivery of a run apart from none.
function countAppends(): { counts: Map<string, number>; stop(): void } {
  const counts = new Map<string, number>();
  const subscription = fixture.clientBus.nc.subscribe(
    fixture.clientBus.subject(memoryAppend.subject),
    {
      callback: (_error, msg) => {
        const key = String(msg.json<{ idempotencyKey?: string }>().idempotencyKey);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      },
    },
  );
  return { counts, stop: () => subscription.unsubscribe() };
}

describe('the engine', () => {
  it('posts a reminder due in a second to the conversation once, on time, and tells the user', async () => {
    await startEngine();
    const userId = randomUUID();
    const events: UserEvent[] = [];
    const reader = await readEvents(
      fixture.clientBus,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(userId),
        schema: UserEvent,
        afterSeq: await lastEventSeq(fixture.clientBus, USER_EVENTS_STREAM.stream),
      },
      (event) => events.push(event),
    );
    const appends = countAppends();
    try {
      const schedule = await create(userId, {
        kind: 'once',
        at: new Date(Date.now() + 1_000).toISOString(),
        action: { type: 'remind', text: 'stretch your legs' },
      });

      const [run] = await settledRuns(userId, schedule.id, 1);
      expect(run).toMatchObject({ status: 'fired', messageId: expect.any(String) });
      const lateMs = Date.parse(run?.finishedAt ?? '') - Date.parse(run?.scheduledFor ?? '');
      expect(lateMs).toBeGreaterThanOrEqual(0);
      // Woken by the change at its due time, not by the engine's longest sleep (a minute); the
      // margin is for a busy machine.
      expect(lateMs).toBeLessThan(2_000);
      const messages = await fixture.conversationMessages(userId);
      expect(messages.map(({ role, content, id }) => ({ role, content, id }))).toEqual([
        { role: 'assistant', content: 'stretch your legs', id: run?.messageId },
      ]);
      expect(
        (await fixture.clientBus.request(schedulerSchedulesGet, { userId, id: schedule.id }))
          .schedule,
      ).toMatchObject({ status: 'ended', nextRunAt: null, runCount: 1 });
      await waitFor(() => events.length > 0, { what: 'the schedule_fired event' });
      expect(events).toEqual([
        expect.objectContaining({
          type: 'schedule_fired',
          schedule: expect.objectContaining({
            id: schedule.id,
            actionType: 'remind',
            nextRunAt: null,
          }),
          run: expect.objectContaining({ id: run?.id, status: 'fired', messageId: run?.messageId }),
          conversationId: messages[0]?.conversationId,
          text: 'stretch your legs',
        }),
      ]);
      expect([...appends.counts.values()]).toEqual([1]);

      // Snoozed, it comes again once. The snooze's time is brought forward here instead of
      // waiting out its minute, and the engine woken as the change would wake it.
      const snoozed = await fixture.clientBus.request(schedulerSchedulesSnooze, {
        userId,
        id: schedule.id,
        minutes: 1,
      });
      expect(snoozed.schedule.status).toBe('active');
      expect(Date.parse(snoozed.schedule.nextRunAt ?? '') - Date.now()).toBeGreaterThan(55_000);
      const { rows } = await fixture.db.pool.query<{ snooze_at: Date }>(
        `UPDATE scheduler.schedules SET snooze_at = now() + interval '500 milliseconds'
          WHERE id = $1 RETURNING snooze_at`,
        [schedule.id],
      );
      fixture.clientBus.publish(schedulesChanged.subject, schedulesChanged.payload, {
        nextRunAt: rows[0]?.snooze_at.toISOString() ?? null,
      });
      const again = await settledRuns(userId, schedule.id, 2);
      expect(again.map((one) => one.status)).toEqual(['fired', 'fired']);
      expect(await fixture.conversationMessages(userId)).toHaveLength(2);
      expect(
        (await fixture.clientBus.request(schedulerSchedulesGet, { userId, id: schedule.id }))
          .schedule.status,
      ).toBe('ended');
    } finally {
      appends.stop();
      await reader.stop();
    }
  });

  it('applies each missed policy after downtime, the history holds every occurrence, and the user is told of each once', async () => {
    const userId = randomUUID();
    const events: UserEvent[] = [];
    const reader = await readEvents(
      fixture.clientBus,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(userId),
        schema: UserEvent,
        afterSeq: await lastEventSeq(fixture.clientBus, USER_EVENTS_STREAM.stream),
      },
      (event) => events.push(event),
    );
    const hourly = (text: string, policy: Partial<ScheduleFields>): ScheduleFields => ({
      kind: 'interval',
      everyMinutes: 60,
      startAt: new Date(Date.now() + 3_600_000).toISOString(),
      graceMinutes: 150,
      action: { type: 'remind', text },
      ...policy,
    });
    const skip = await create(userId, hourly('skip', { missedPolicy: 'skip' }));
    const once = await create(userId, hourly('run once', { missedPolicy: 'run_once' }));
    const all = await create(
      userId,
      hourly('run all', { missedPolicy: 'run_all', missedMaxRuns: 2 }),
    );
    const late = await create(userId, {
      kind: 'once',
      at: new Date(Date.now() + 3_600_000).toISOString(),
      graceMinutes: 10,
      action: { type: 'remind', text: 'too late' },
    });
    // No scheduler ran for the last 6 hours: the schedules are as they were made then.
    await fixture.db.pool.query(
      `UPDATE scheduler.schedules
          SET start_at = start_at - interval '6 hours 2 minutes',
              next_run_at = next_run_at - interval '6 hours 2 minutes'
        WHERE user_id = $1 AND kind = 'interval'`,
      [userId],
    );
    // Due half an hour ago, past its grace window of 10 minutes.
    await fixture.db.pool.query(
      `UPDATE scheduler.schedules
          SET at = at - interval '90 minutes', next_run_at = next_run_at - interval '90 minutes'
        WHERE id = $1`,
      [late.id],
    );

    await startEngine();

    // Occurrences 5 h 2 min, 4 h 2 min, ... 2 min ago: three past the grace window of 150 min.
    const statuses = async (id: string, count: number) =>
      (await settledRuns(userId, id, count))
        .reverse()
        .map((run) => (run.reason ? `${run.status}:${run.reason}` : run.status));
    const pastGrace = Array(3).fill('missed:past_grace_window');
    expect(await statuses(skip.id, 6)).toEqual([
      ...pastGrace,
      ...Array(3).fill('skipped:missed_skip_policy'),
    ]);
    expect(await statuses(once.id, 6)).toEqual([
      ...pastGrace,
      'skipped:caught_up_by_later_run',
      'skipped:caught_up_by_later_run',
      'fired',
    ]);
    expect(await statuses(all.id, 6)).toEqual([
      ...pastGrace,
      'skipped:missed_max_runs',
      'fired',
      'fired',
    ]);
    expect(await statuses(late.id, 1)).toEqual(['missed:past_grace_window']);
    const texts = (await fixture.conversationMessages(userId)).map((message) => message.content);
    expect(texts.sort()).toEqual(['run all', 'run all', 'run once']);
    // Each interval schedule goes on at its next hour.
    const next = (await fixture.clientBus.request(schedulerSchedulesGet, { userId, id: once.id }))
      .schedule.nextRunAt;
    expect(Date.parse(next ?? '') - Date.now()).toBeGreaterThan(50 * 60_000);

    // One schedule_fired event per run, whatever its outcome, as the history tells it.
    const history = (
      await Promise.all([skip, once, all, late].map((schedule) => runsOf(userId, schedule.id)))
    ).flat();
    try {
      await waitFor(() => events.length >= history.length, { what: 'an event per run' });
    } finally {
      await reader.stop();
    }
    const told = events.flatMap((event) => (event.type === 'schedule_fired' ? [event.run] : []));
    expect(told).toHaveLength(events.length);
    const byId = (a: ScheduleRun, b: ScheduleRun) => a.id.localeCompare(b.id);
    expect(told.sort(byId)).toEqual(history.sort(byId));
    const missedEvent = events.find(
      (event) => event.type === 'schedule_fired' && event.schedule.id === late.id,
    );
    expect(missedEvent).toMatchObject({
      run: { status: 'missed', reason: 'past_grace_window' },
      schedule: { actionType: 'remind', nextRunAt: null },
      text: 'too late',
    });
    // Nothing posted, and the schedule names no conversation: none to name.
    expect(missedEvent).not.toHaveProperty('conversationId');

    // Told again (a delivery repeated after a crash), the stream does not take it twice.
    const stored = await findSchedule(fixture.db.pool, userId, late.id);
    const [run] = await listRuns(fixture.db.pool, userId, late.id, { limit: 1, before: undefined });
    if (!stored || !run) throw new Error('the missed reminder or its run is gone');
    const seq = await lastEventSeq(fixture.clientBus, USER_EVENTS_STREAM.stream);
    await announceRun(fixture.clientBus, stored, run, null);
    expect(await lastEventSeq(fixture.clientBus, USER_EVENTS_STREAM.stream)).toBe(seq);
  });

  it('finishes the claims of a process that crashed before or after delivering, once each', async () => {
    const userId = randomUUID();
    const reminder = (text: string): ScheduleFields => ({
      kind: 'once',
      at: new Date(Date.now() + 3_600_000).toISOString(),
      action: { type: 'remind', text },
    });
    const before = await create(userId, reminder('crashed before delivering'));
    const after = await create(userId, reminder('crashed after delivering'));
    // As a claim leaves them: the schedules advanced, a run each, leased by a process that
    // died 10 s ago.
    const { rows: runs } = await fixture.db.pool.query<{ id: string; schedule_id: string }>(
      `WITH claimed AS (
         UPDATE scheduler.schedules
            SET at = now() - interval '40 seconds', next_run_at = NULL, status = 'ended',
                run_count = 1
          WHERE user_id = $1 RETURNING id, user_id, at)
       INSERT INTO scheduler.runs (id, schedule_id, user_id, scheduled_for, status, started_at,
                                   attempts, lease_until)
       SELECT gen_random_uuid(), id, user_id, at, 'running', at, 1, now() - interval '10 seconds'
         FROM claimed
       RETURNING id, schedule_id`,
      [userId],
    );
    // The second one got as far as its message.
    const afterRun = runs.find((run) => run.schedule_id === after.id);
    await fixture.clientBus.request(memoryAppend, {
      userId,
      role: 'assistant',
      content: 'crashed after delivering',
      idempotencyKey: idempotencyKeyOf({ id: afterRun?.id ?? '' }),
      metadata: { scheduleId: after.id, scheduleRunId: afterRun?.id },
    });

    await startEngine();

    for (const schedule of [before, after]) {
      expect(await settledRuns(userId, schedule.id, 1)).toEqual([
        expect.objectContaining({ status: 'fired', messageId: expect.any(String) }),
      ]);
    }
    const texts = (await fixture.conversationMessages(userId)).map((message) => message.content);
    expect(texts.sort()).toEqual(['crashed after delivering', 'crashed before delivering']);
    expect(
      await fixture.countRows(
        "SELECT count(*) FROM scheduler.runs WHERE user_id = $1 AND attempts = 2 AND status = 'fired'",
        [userId],
      ),
    ).toBe(2);
  });

  it('never fires one occurrence twice with two engines on one database', async () => {
    await startEngine();
    await startEngine();
    const appends = countAppends();
    try {
      const users = [randomUUID(), randomUUID(), randomUUID()];
      const start = Date.now() + 8_000;
      const made: string[] = [];
      // 25 at a time: the test's pool has 4 connections.
      for (let batch = 0; batch < 300; batch += 25) {
        const ids = await Promise.all(
          Array.from({ length: 25 }, async (_, offset) => {
            const index = batch + offset;
            const schedule = await create(users[index % users.length] ?? '', {
              kind: 'once',
              at: new Date(start + (index % 100) * 15).toISOString(),
              action: { type: 'remind', text: `reminder ${index}` },
            });
            return schedule.id;
          }),
        );
        made.push(...ids);
      }

      await waitFor(
        async () =>
          (await fixture.countRows(
            "SELECT count(*) FROM scheduler.runs WHERE status = 'fired' AND user_id = ANY($1)",
            [users],
          )) === made.length || undefined,
        { timeoutMs: 30_000, what: 'every reminder fired' },
      );

      const keys = await fixture.db.pool.query<{ id: string }>(
        'SELECT id FROM scheduler.runs WHERE user_id = ANY($1)',
        [users],
      );
      expect(keys.rows).toHaveLength(made.length);
      // Each run delivered by exactly one engine, once.
      expect(keys.rows.map((run) => appends.counts.get(idempotencyKeyOf(run)))).toEqual(
        Array(made.length).fill(1),
      );
      const texts = (
        await Promise.all(users.map((userId) => fixture.conversationMessages(userId)))
      ).flatMap((messages) => messages.map((message) => message.content));
      expect(new Set(texts).size).toBe(made.length);
      expect(texts).toHaveLength(made.length);
    } finally {
      appends.stop();
    }
  });
});
