import { randomUUID } from 'node:crypto';
import { memoryAppend, schedulerSchedulesGet, schedulerSchedulesList } from '@jarvis/contracts';
import { Temporal } from 'temporal-polyfill';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServicesFixture, startServicesFixture } from '../services-fixture';
import { type AgentTool, type ToolContext, ToolInputError } from './agent-tool';
import { createScheduleTools } from './schedule-tools';

// The schedule tools against the scheduler as its own process, over the bus, with memory, which
// tells the scheduler whose a conversation is.
let fixture: ServicesFixture;
let tools: Map<string, AgentTool>;

beforeAll(async () => {
  fixture = await startServicesFixture(['scheduler', 'memory']);
  tools = new Map(
    createScheduleTools(fixture.bus, new Set()).map((tool) => [tool.definition.name, tool]),
  );
});

afterAll(async () => {
  await fixture?.stop();
});

// A turn of a new user, in the user's persistent conversation (made by its first message).
async function turn(timeZone: string | undefined): Promise<ToolContext> {
  const userId = randomUUID();
  const { message } = await fixture.bus.request(memoryAppend, {
    userId,
    role: 'user',
    content: 'remind me',
  });
  return {
    userId,
    conversationId: message.conversationId,
    runId: randomUUID(),
    turnId: randomUUID(),
    missionId: undefined,
    userMessageId: randomUUID(),
    timeZone,
    timeoutMs: 5_000,
  };
}

type Shown = {
  id: string;
  name?: string;
  action: unknown;
  rule: string;
  status: string;
  nextRun: string | null;
  nextRunAt: string | null;
  note?: string;
};

async function call(name: string, args: Record<string, unknown>, context: ToolContext) {
  const tool = tools.get(name);
  if (!tool) throw new Error(`no tool ${name}`);
  return tool.run(args, context);
}

async function create(args: Record<string, unknown>, context: ToolContext): Promise<Shown> {
  return (await call('schedule_create', args, context)) as Shown;
}

async function failure(name: string, args: Record<string, unknown>, context: ToolContext) {
  return call(name, args, context).then(
    () => {
      throw new Error(`${name} succeeded`);
    },
    (error: unknown) => error,
  );
}

// The wall clock of `instant` in `timeZone`, read with Intl: what the user's clock shows then.
function wallClock(instant: string | null, timeZone: string) {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'long',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(instant ?? Number.NaN));
  const part = (type: string) => parts.find((found) => found.type === type)?.value;
  return {
    date: `${part('year')}-${part('month')}-${part('day')}`,
    time: `${part('hour')}:${part('minute')}`,
    weekday: part('weekday'),
  };
}

async function stored(context: ToolContext, id: string) {
  return (await fixture.client.request(schedulerSchedulesGet, { userId: context.userId, id }))
    .schedule;
}

describe('schedule_create', () => {
  it("makes a reminder for tomorrow at 9 on the user's clock, and says when in their zone", async () => {
    const context = await turn('Europe/Oslo');

    const made = await create({ at: 'tomorrow at 9', remind: 'Call Anna', name: 'Anna' }, context);

    const tomorrow = Temporal.Now.plainDateISO('Europe/Oslo').add({ days: 1 });
    expect(wallClock(made.nextRunAt, 'Europe/Oslo')).toMatchObject({
      date: tomorrow.toString(),
      time: '09:00',
    });
    expect(made.nextRun).toMatch(/^[A-Z][a-z]+day \d{1,2} [A-Z][a-z]+( \d{4})?, 09:00 Oslo time$/);
    expect(made.note).toBe(`Set for ${made.nextRun}: tell the user so, in these words.`);
    expect(made).toMatchObject({
      name: 'Anna',
      action: { type: 'remind', text: 'Call Anna' },
      rule: 'once',
      status: 'active',
    });
    expect(await stored(context, made.id)).toMatchObject({
      kind: 'once',
      at: made.nextRunAt,
      timeZone: 'Europe/Oslo',
      conversationId: context.conversationId,
      createdBy: 'model',
    });
  });

  it('counts "in 20 minutes" from now, and takes an instant with an offset as it is', async () => {
    const context = await turn('America/New_York');

    const before = Date.now();
    const soon = await create({ at: 'in 20 minutes', remind: 'Stretch' }, context);
    const exact = await create(
      { at: '2099-12-03T09:00:00+01:00', prompt: 'Brief me on the day' },
      context,
    );

    const offsetMs = Date.parse(soon.nextRunAt ?? '') - before;
    expect(offsetMs).toBeGreaterThanOrEqual(20 * 60_000 - 1_000);
    expect(offsetMs).toBeLessThanOrEqual(20 * 60_000 + 5_000);
    expect(exact.nextRunAt).toBe('2099-12-03T08:00:00.000Z');
    expect(exact.nextRun).toBe('Thursday 3 December 2099, 03:00 New York time');
    expect(exact.action).toEqual({ type: 'prompt', instruction: 'Brief me on the day' });
  });

  it('tells the model the time is UTC when the user has set no zone', async () => {
    const context = await turn(undefined);

    const made = await create({ at: 'tomorrow at 9', remind: 'Call Anna' }, context);

    expect(wallClock(made.nextRunAt, 'UTC').time).toBe('09:00');
    expect(made.nextRun).toMatch(/, 09:00 UTC$/);
    expect(made.note).toBe(
      `Set for ${made.nextRun}. The user has not set a time zone, so times are UTC: tell them so, and that they can set their own time zone in the settings.`,
    );
    expect(await stored(context, made.id)).toMatchObject({ timeZone: 'UTC' });
  });

  it('makes a cron schedule in the zone it names, told in that zone, and an interval', async () => {
    const context = await turn('Europe/Oslo');

    const weekdays = await create(
      { cron: '0 7 * * 1-5', timeZone: 'America/New_York', mission: 'Check my budget file' },
      context,
    );
    const hourly = await create({ everyMinutes: 60, remind: 'Drink water' }, context);

    expect(weekdays.rule).toBe('cron "0 7 * * 1-5" in America/New_York');
    const inNewYork = wallClock(weekdays.nextRunAt, 'America/New_York');
    expect(inNewYork.time).toBe('07:00');
    expect(['Saturday', 'Sunday']).not.toContain(inNewYork.weekday);
    // Told on the clock the rule follows, as the scheduler words it, not the user's.
    expect(weekdays.nextRun).toMatch(
      /^[A-Z][a-z]+day \d{1,2} [A-Z][a-z]+( \d{4})?, 07:00 New York time$/,
    );
    expect(weekdays.action).toEqual({ type: 'mission', objective: 'Check my budget file' });
    expect(hourly.rule).toBe('every 60 minutes');
    expect(Date.parse(hourly.nextRunAt ?? '') - Date.now()).toBeGreaterThan(59 * 60_000);
  });

  it('hands the model its mistakes as ToolInputError, storing nothing', async () => {
    const context = await turn('Europe/Oslo');

    const unreadable = await failure('schedule_create', { at: 'whenever', remind: 'x' }, context);
    const past = await failure(
      'schedule_create',
      { at: '2020-01-01T09:00:00+01:00', remind: 'x' },
      context,
    );
    const twoTimes = await failure(
      'schedule_create',
      { at: 'in 5 minutes', cron: '0 7 * * *', remind: 'x' },
      context,
    );
    const noAction = await failure('schedule_create', { at: 'in 5 minutes' }, context);
    // The scheduler's own refusals: a cron rule it cannot read, agent work too often.
    const badCron = await failure('schedule_create', { cron: '61 * * * *', remind: 'x' }, context);
    const tooOften = await failure(
      'schedule_create',
      { everyMinutes: 1, prompt: 'Check the news' },
      context,
    );

    for (const error of [unreadable, past, twoTimes, noAction, badCron, tooOften]) {
      expect(error).toBeInstanceOf(ToolInputError);
    }
    expect(unreadable).toMatchObject({ message: /^at: cannot read "whenever" as a time/ });
    expect(past).toMatchObject({
      message: /^at: 2020-01-01T09:00:00\+01:00 is in the past/,
    });
    expect(twoTimes).toMatchObject({ message: /exactly one of at, cron, everyMinutes/ });
    expect(noAction).toMatchObject({ message: /exactly one of remind, prompt, mission/ });
    expect(badCron).toMatchObject({ message: /^cron: / });
    expect(tooOften).toMatchObject({ message: /^everyMinutes: agent work/ });
    const { schedules } = await fixture.client.request(schedulerSchedulesList, {
      userId: context.userId,
    });
    expect(schedules).toEqual([]);
  });
});

describe('schedule_list and schedule_cancel', () => {
  it("lists the user's own schedules with times in their zone, and cancels only theirs", async () => {
    const context = await turn('Asia/Kolkata');
    const other = await turn('Asia/Kolkata');
    const first = await create({ at: 'in 10 minutes', remind: 'Tea' }, context);
    const second = await create({ at: 'in 2 hours', remind: 'Walk' }, context);
    const theirs = await create({ at: 'in 10 minutes', remind: 'Not yours' }, other);

    const listed = (await call('schedule_list', {}, context)) as { schedules: Shown[] };
    const refused = await failure('schedule_cancel', { id: theirs.id }, context);
    const cancelled = await call('schedule_cancel', { id: first.id }, context);
    const after = (await call('schedule_list', {}, context)) as { schedules: Shown[] };

    expect(listed.schedules.map((schedule) => schedule.id)).toEqual([first.id, second.id]);
    expect(listed.schedules[0]?.nextRun).toBe(first.nextRun);
    expect(listed.schedules[0]?.nextRun).toMatch(/ Kolkata time$/);
    expect(refused).toBeInstanceOf(ToolInputError);
    expect(refused).toMatchObject({ message: 'schedule not found' });
    expect(cancelled).toEqual({ cancelled: first.id });
    expect(after.schedules.map((schedule) => schedule.id)).toEqual([second.id]);
    expect(await stored(other, theirs.id)).toMatchObject({ status: 'active' });
  });
});
