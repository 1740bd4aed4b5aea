import { randomUUID } from 'node:crypto';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  memoryAppend,
  type ScheduleFields,
  schedulerSchedulesCreate,
  schedulerSchedulesDelete,
  schedulerSchedulesGet,
  schedulerSchedulesList,
  schedulerSchedulesPreview,
  schedulerSchedulesRuns,
  schedulerSchedulesSnooze,
  schedulerSchedulesUpdate,
} from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerFixture, startSchedulerFixture } from './scheduler-fixture';

let fixture: SchedulerFixture;

// Small limits, so that the tests reach them in a few requests.
const LIMITS = { maxSchedulesPerUser: 4, agentRunsPerDay: 30, agentMinIntervalMinutes: 15 };

beforeAll(async () => {
  // Memory as its own process: a schedule's conversation must be one of the user's there.
  fixture = await startSchedulerFixture('scheduler-handlers', {
    services: ['memory'],
    limits: LIMITS,
  });
});

afterAll(async () => {
  await fixture?.stop();
});

const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();

function create(userId: string, schedule: ScheduleFields, userTimeZone = 'UTC') {
  return fixture.clientBus.request(schedulerSchedulesCreate, {
    userId,
    userTimeZone,
    isUserTimeZoneSet: userTimeZone !== 'UTC',
    schedule,
  });
}

const countSchedules = (userId: string) =>
  fixture.countRows('SELECT count(*) FROM scheduler.schedules WHERE user_id = $1', [userId]);

describe('scheduler.schedules.create', () => {
  it('makes a one-shot reminder due at its instant', async () => {
    const userId = randomUUID();
    const at = new Date(Date.now() + 3_600_000);
    // Given with an offset: stored and told as the same instant.
    const local = new Date(at.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');

    const { schedule } = await create(userId, {
      kind: 'once',
      at: local,
      action: { type: 'remind', text: 'call Anna' },
      name: 'Anna',
    });

    expect(schedule).toMatchObject({
      kind: 'once',
      at: at.toISOString(),
      action: { type: 'remind', text: 'call Anna' },
      name: 'Anna',
      timeZone: 'UTC',
      nextRunAt: at.toISOString(),
      status: 'active',
      missedPolicy: 'run_once',
      graceMinutes: 720,
      runCount: 0,
      createdBy: 'user',
    });
    expect(
      await fixture.clientBus.request(schedulerSchedulesGet, { userId, id: schedule.id }),
    ).toEqual({ schedule });
  });

  it("makes a cron prompt on the wall clock of the user's zone", async () => {
    const userId = randomUUID();

    const { schedule } = await create(
      userId,
      {
        kind: 'cron',
        cron: '0 7 * * 1-5',
        action: { type: 'prompt', instruction: 'brief me on my day' },
        startAt: '2031-03-29T00:00:00+01:00',
      },
      'Europe/Oslo',
    );

    // From Saturday 29 March 2031: Monday the 31st, 07:00 in Oslo, on summer time since the 30th.
    expect(schedule).toMatchObject({
      kind: 'cron',
      cron: '0 7 * * 1-5',
      timeZone: 'Europe/Oslo',
      nextRunAt: '2031-03-31T05:00:00.000Z',
      missedPolicy: 'skip',
      graceMinutes: 60,
      status: 'active',
    });
  });

  it('makes an interval mission that first runs at its start', async () => {
    const userId = randomUUID();
    const startAt = inMinutes(90);

    const { schedule } = await create(userId, {
      kind: 'interval',
      everyMinutes: 24 * 60,
      startAt,
      action: { type: 'mission', objective: 'check my budget file' },
      missedPolicy: 'run_all',
      missedMaxRuns: 3,
      maxRuns: 12,
    });

    expect(schedule).toMatchObject({
      kind: 'interval',
      everyMinutes: 1_440,
      nextRunAt: startAt,
      missedPolicy: 'run_all',
      missedMaxRuns: 3,
      maxRuns: 12,
      action: { type: 'mission', objective: 'check my budget file' },
    });
  });

  const badInput: Array<[string, ScheduleFields | Record<string, unknown>, RegExp]> = [
    [
      'a cron field out of range',
      { kind: 'cron', cron: '61 * * * *', action: { type: 'remind', text: 'x' } },
      /^cron: .*61/,
    ],
    [
      'a cron rule that never fires',
      { kind: 'cron', cron: '0 0 30 2 *', action: { type: 'remind', text: 'x' } },
      /^cron: /,
    ],
    [
      'an unknown zone',
      {
        kind: 'cron',
        cron: '0 9 * * *',
        timeZone: 'Mars/Olympus_Mons',
        action: { type: 'remind', text: 'x' },
      },
      /timeZone/,
    ],
    [
      'an instant in the past',
      { kind: 'once', at: inMinutes(-1), action: { type: 'remind', text: 'x' } },
      /^at: must be in the future$/,
    ],
    [
      'an end before the start',
      {
        kind: 'interval',
        everyMinutes: 60,
        startAt: inMinutes(120),
        endAt: inMinutes(60),
        action: { type: 'remind', text: 'x' },
      },
      /endAt/,
    ],
    [
      'an end before the first occurrence',
      {
        kind: 'cron',
        cron: '0 9 1 1 *',
        endAt: inMinutes(5),
        action: { type: 'remind', text: 'x' },
      },
      /^endAt: before the first occurrence/,
    ],
    [
      'agent work more often than the minimum interval',
      { kind: 'interval', everyMinutes: 5, action: { type: 'prompt', instruction: 'x' } },
      /^everyMinutes: agent work \(prompt, mission\) may run at most every 15 minutes/,
    ],
    [
      'agent work whose rule alone passes the daily cap',
      { kind: 'cron', cron: '*/30 * * * *', action: { type: 'mission', objective: 'x' } },
      /^cron: this rule runs up to 48 times a day/,
    ],
    [
      "the other kind's field",
      { kind: 'once', at: inMinutes(5), cron: '* * * * *', action: { type: 'remind', text: 'x' } },
      /cron/,
    ],
  ];

  it.each(
    badInput,
  )('refuses %s with bad_request naming the field, storing nothing', async (_what, schedule, message) => {
    const userId = randomUUID();
    // Past the client's own validation, so the scheduler's edge is what answers.
    const reply = await sendRaw(fixture.clientBus, schedulerSchedulesCreate.subject, {
      userId,
      userTimeZone: 'UTC',
      schedule,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(message) },
    });
    expect(await countSchedules(userId)).toBe(0);
  });

  it('refuses more than the per-user limit of schedules that have not ended', async () => {
    const userId = randomUUID();
    const reminder = (minutes: number): ScheduleFields => ({
      kind: 'once',
      at: inMinutes(minutes),
      action: { type: 'remind', text: `reminder ${minutes}` },
    });
    const made = [];
    for (let index = 1; index <= LIMITS.maxSchedulesPerUser; index += 1) {
      made.push((await create(userId, reminder(index))).schedule);
    }

    const error = await catchBusError(create(userId, reminder(10)));
    expect(error.code).toBe('bad_request');
    expect(error.message).toBe('schedules: at most 4 active or paused per user; delete some');
    expect(await countSchedules(userId)).toBe(LIMITS.maxSchedulesPerUser);

    // Another user is not counted against this one.
    await expect(create(randomUUID(), reminder(10))).resolves.toBeDefined();
    // Deleting one makes room again.
    await fixture.clientBus.request(schedulerSchedulesDelete, { userId, id: made[0]?.id ?? '' });
    await expect(create(userId, reminder(11))).resolves.toBeDefined();
  });

  it("refuses agent work that would take the user's schedules past the daily cap", async () => {
    const userId = randomUUID();
    const hourly = (instruction: string): ScheduleFields => ({
      kind: 'cron',
      cron: '0 * * * *',
      action: { type: 'prompt', instruction },
    });
    await create(userId, hourly('check the news'));

    const error = await catchBusError(create(userId, hourly('check the weather')));
    expect(error.code).toBe('bad_request');
    expect(error.message).toBe(
      'schedules: your agent work (prompt, mission) could run 48 times in a day, more than the 30 allowed',
    );
    expect(await countSchedules(userId)).toBe(1);
    // Reminders cost no model calls: no cap.
    await expect(
      create(userId, { kind: 'cron', cron: '*/5 * * * *', action: { type: 'remind', text: 'x' } }),
    ).resolves.toBeDefined();
    // One-shot agent work counts by how many fall within one day.
    for (const day of [1, 2]) {
      await create(userId, {
        kind: 'once',
        at: inMinutes(day * 24 * 60),
        action: { type: 'prompt', instruction: `day ${day}` },
      });
    }
  });
});

describe("another user's schedule", () => {
  it('is not found, whatever is asked of it, and not listed', async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const { schedule } = await create(alice, {
      kind: 'once',
      at: inMinutes(30),
      action: { type: 'remind', text: "alice's secret" },
    });
    const id = schedule.id;
    const bus = fixture.clientBus;

    const asked = [
      () => bus.request(schedulerSchedulesGet, { userId: bob, id }),
      () =>
        bus.request(schedulerSchedulesUpdate, { userId: bob, id, changes: { status: 'paused' } }),
      () => bus.request(schedulerSchedulesDelete, { userId: bob, id }),
      () => bus.request(schedulerSchedulesSnooze, { userId: bob, id, minutes: 5 }),
      () => bus.request(schedulerSchedulesRuns, { userId: bob, id }),
    ];
    for (const request of asked) {
      const error = await catchBusError(request());
      expect(error.code).toBe('not_found');
    }

    expect(await bus.request(schedulerSchedulesList, { userId: bob })).toEqual({ schedules: [] });
    expect(await bus.request(schedulerSchedulesGet, { userId: alice, id })).toEqual({ schedule });
  });

  it("refuses another user's conversation, or none, on create and on update, storing nothing", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const bus = fixture.clientBus;
    const conversationOf = async (userId: string) =>
      (await bus.request(memoryAppend, { userId, role: 'user', content: 'hello' })).message
        .conversationId;
    const alicesConversation = await conversationOf(alice);
    const bobsConversation = await conversationOf(bob);
    const reminder = (conversationId: string): ScheduleFields => ({
      kind: 'once',
      at: inMinutes(30),
      action: { type: 'remind', text: 'call Anna' },
      conversationId,
    });

    for (const conversationId of [alicesConversation, randomUUID()]) {
      const error = await catchBusError(create(bob, reminder(conversationId)));
      expect(error).toMatchObject({
        code: 'not_found',
        message: `conversationId: no conversation ${conversationId} of yours`,
      });
    }
    expect(await countSchedules(bob)).toBe(0);

    const { schedule } = await create(bob, reminder(bobsConversation));
    expect(schedule.conversationId).toBe(bobsConversation);
    const error = await catchBusError(
      bus.request(schedulerSchedulesUpdate, {
        userId: bob,
        id: schedule.id,
        changes: { conversationId: alicesConversation, name: 'moved' },
      }),
    );
    expect(error).toMatchObject({
      code: 'not_found',
      message: `conversationId: no conversation ${alicesConversation} of yours`,
    });
    expect(await bus.request(schedulerSchedulesGet, { userId: bob, id: schedule.id })).toEqual({
      schedule,
    });
    // Back to the persistent conversation.
    const updated = await bus.request(schedulerSchedulesUpdate, {
      userId: bob,
      id: schedule.id,
      changes: { conversationId: null },
    });
    expect(updated.schedule.conversationId).toBeNull();
  });
});

describe('changing a schedule', () => {
  it('pauses, resumes from now, edits its rule and deletes it with its history', async () => {
    const userId = randomUUID();
    const bus = fixture.clientBus;
    const { schedule } = await create(
      userId,
      { kind: 'cron', cron: '30 8 * * *', action: { type: 'remind', text: 'water the plants' } },
      'America/New_York',
    );
    const change = (changes: Record<string, unknown>) =>
      bus.request(schedulerSchedulesUpdate, { userId, id: schedule.id, changes });

    expect((await change({ status: 'paused' })).schedule.status).toBe('paused');
    expect(
      (await bus.request(schedulerSchedulesList, { userId, status: 'paused' })).schedules,
    ).toHaveLength(1);

    const resumed = (await change({ status: 'active' })).schedule;
    expect(resumed.status).toBe('active');
    expect(resumed.nextRunAt).toBe(schedule.nextRunAt);

    const edited = (await change({ cron: '0 20 * * *', name: 'evening', timeZone: 'Asia/Kolkata' }))
      .schedule;
    expect(edited).toMatchObject({ cron: '0 20 * * *', name: 'evening', timeZone: 'Asia/Kolkata' });
    // 20:00 in Kolkata (UTC+05:30) is 14:30 UTC.
    expect(edited.nextRunAt?.slice(11)).toBe('14:30:00.000Z');
    expect(Date.parse(edited.nextRunAt ?? '')).toBeGreaterThan(Date.now());

    const badEdit = await catchBusError(change({ cron: '0 25 * * *' }));
    expect(badEdit.code).toBe('bad_request');
    expect(badEdit.message).toMatch(/^cron: /);
    const wrongKind = await catchBusError(change({ everyMinutes: 60 }));
    expect(wrongKind.message).toBe('everyMinutes: not for a schedule of kind cron');
    // Nothing of a refused edit was stored.
    expect(
      (await bus.request(schedulerSchedulesGet, { userId, id: schedule.id })).schedule,
    ).toEqual(edited);

    await fixture.db.pool.query(
      `INSERT INTO scheduler.runs (id, schedule_id, user_id, scheduled_for, status)
       VALUES ($1, $2, $3, now() - interval '1 day', 'fired')`,
      [randomUUID(), schedule.id, userId],
    );
    expect(await bus.request(schedulerSchedulesDelete, { userId, id: schedule.id })).toEqual({});
    expect(
      (await catchBusError(bus.request(schedulerSchedulesGet, { userId, id: schedule.id }))).code,
    ).toBe('not_found');
    expect(
      await fixture.countRows('SELECT count(*) FROM scheduler.runs WHERE schedule_id = $1', [
        schedule.id,
      ]),
    ).toBe(0);
  });

  it('ends a schedule whose new run limit is already reached, and refuses to resume it', async () => {
    const userId = randomUUID();
    const { schedule } = await create(userId, {
      kind: 'interval',
      everyMinutes: 60,
      action: { type: 'remind', text: 'stretch' },
    });
    const change = (changes: Record<string, unknown>) =>
      fixture.clientBus.request(schedulerSchedulesUpdate, { userId, id: schedule.id, changes });
    await fixture.db.pool.query('UPDATE scheduler.schedules SET run_count = 2 WHERE id = $1', [
      schedule.id,
    ]);

    expect((await change({ maxRuns: 2 })).schedule).toMatchObject({
      status: 'ended',
      nextRunAt: null,
    });
    const error = await catchBusError(change({ status: 'active' }));
    expect(error.code).toBe('bad_request');
    expect(error.message).toBe('maxRuns: all 2 runs have been made');
    expect((await change({ maxRuns: null, status: 'active' })).schedule.status).toBe('active');
  });

  it('snoozes only a reminder that has fired', async () => {
    const userId = randomUUID();
    const bus = fixture.clientBus;
    const reminder = await create(userId, {
      kind: 'once',
      at: inMinutes(10),
      action: { type: 'remind', text: 'tea' },
    });
    const prompt = await create(userId, {
      kind: 'once',
      at: inMinutes(10),
      action: { type: 'prompt', instruction: 'tea?' },
    });

    const notFired = await catchBusError(
      bus.request(schedulerSchedulesSnooze, { userId, id: reminder.schedule.id, minutes: 5 }),
    );
    expect(notFired).toMatchObject({ code: 'conflict', message: 'the reminder has not fired yet' });
    const notReminder = await catchBusError(
      bus.request(schedulerSchedulesSnooze, { userId, id: prompt.schedule.id, minutes: 5 }),
    );
    expect(notReminder).toMatchObject({
      code: 'conflict',
      message: 'only a reminder (action remind) can be snoozed',
    });
  });
});

describe('scheduler.schedules.runs', () => {
  it("pages a schedule's history, newest first", async () => {
    const userId = randomUUID();
    const { schedule } = await create(userId, {
      kind: 'interval',
      everyMinutes: 60,
      action: { type: 'remind', text: 'stretch' },
    });
    // History as the engine leaves it.
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await fixture.db.pool.query(
      `INSERT INTO scheduler.runs (id, schedule_id, user_id, scheduled_for, status, reason,
                                   started_at, finished_at, message_id)
       VALUES ($1, $4, $5, '2030-01-01T10:00Z', 'fired', NULL, '2030-01-01T10:00:01Z',
               '2030-01-01T10:00:02Z', $6),
              ($2, $4, $5, '2030-01-01T11:00Z', 'missed', 'past_grace_window', NULL,
               '2030-01-01T20:00Z', NULL),
              ($3, $4, $5, '2030-01-01T12:00Z', 'skipped', 'missed_skip_policy', NULL,
               '2030-01-01T20:00Z', NULL)`,
      [...ids, schedule.id, userId, randomUUID()],
    );

    const first = await fixture.clientBus.request(schedulerSchedulesRuns, {
      userId,
      id: schedule.id,
      limit: 2,
    });
    expect(first.runs.map((run) => run.id)).toEqual([ids[2], ids[1]]);
    expect(first.runs[0]).toEqual({
      id: ids[2],
      scheduleId: schedule.id,
      scheduledFor: '2030-01-01T12:00:00.000Z',
      startedAt: null,
      finishedAt: '2030-01-01T20:00:00.000Z',
      status: 'skipped',
      reason: 'missed_skip_policy',
    });
    expect(first.nextBefore).toBe('2030-01-01T11:00:00.000Z');

    const second = await fixture.clientBus.request(schedulerSchedulesRuns, {
      userId,
      id: schedule.id,
      limit: 2,
      before: first.nextBefore,
    });
    expect(second.runs).toEqual([
      expect.objectContaining({ id: ids[0], status: 'fired', messageId: expect.any(String) }),
    ]);
    expect(second.nextBefore).toBeUndefined();
  });
});

describe('scheduler.schedules.preview', () => {
  it('gives the next fire times of a cron rule in a zone, across a DST change', async () => {
    const { times } = await fixture.clientBus.request(schedulerSchedulesPreview, {
      cron: '30 2 * * *',
      timeZone: 'Europe/Oslo',
      from: '2026-03-27T12:00:00Z',
      count: 3,
    });

    // 02:30 does not exist on 29 March 2026 in Oslo: it fires at 03:30 summer time.
    expect(times).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  it("uses the user's zone without one, and names a bad rule", async () => {
    const { times } = await fixture.clientBus.request(schedulerSchedulesPreview, {
      cron: '0 9 * * *',
      userTimeZone: 'Asia/Kolkata',
      from: '2026-01-01T00:00:00Z',
      count: 1,
    });
    expect(times).toEqual(['2026-01-01T03:30:00.000Z']);

    const error = await catchBusError(
      fixture.clientBus.request(schedulerSchedulesPreview, { cron: '0 9 * 13 *' }),
    );
    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/^cron: .*13/);
  });
});
