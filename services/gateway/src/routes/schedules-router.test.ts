import { randomUUID } from 'node:crypto';
import {
  MemoryMessagesListResponse,
  type ScheduleFields,
  ScheduleResponse,
  SchedulesListResponse,
  SchedulesPreviewResponse,
  SchedulesRunsResponse,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../services/api-keys';
import {
  badRequest,
  type RouterFixture,
  startRouterFixture,
  type TestUser,
} from './router-fixture';

// /v1/schedules through the gateway, in front of the real scheduler (and memory, which it posts
// reminders to), each its own process: the user's zone goes along, and each user sees only
// their own schedules.
let harness: RouterFixture;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', { services: ['memory', 'scheduler'] });
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

const HOUR_MS = 60 * 60 * 1_000;
const inHours = (hours: number) => new Date(Date.now() + hours * HOUR_MS).toISOString();
const REMIND = { type: 'remind', text: 'call Anna' } as const;
const WEEKDAYS_AT_9: ScheduleFields = { kind: 'cron', cron: '0 9 * * 1-5', action: REMIND };

// A user of the test's own, with a zone set or not.
async function newUser(name: string, timeZone?: string): Promise<TestUser> {
  const created = await createUser(harness.db.pool, name);
  const user = { id: created.user.id, key: created.apiKey };
  if (timeZone) {
    const reply = await call('PATCH', '/me', { key: user.key, body: { timeZone } });
    expect(reply.status).toBe(200);
  }
  return user;
}

async function create(key: string, body: ScheduleFields) {
  const reply = await call('POST', '/schedules', { key, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return ScheduleResponse.parse(reply.body).schedule;
}

async function list(key: string) {
  const reply = await call('GET', '/schedules', { key });
  expect(reply.status).toBe(200);
  return SchedulesListResponse.parse(reply.body).schedules;
}

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: expect.any(String) } },
};

describe('POST /v1/schedules', () => {
  it('answers 401 without a key', async () => {
    expect((await call('POST', '/schedules', { body: WEEKDAYS_AT_9 })).status).toBe(401);
  });

  it("answers 201 with the schedule, told in the user's zone by default", async () => {
    const oslo = await newUser('oslo', 'Europe/Oslo');
    const reply = await call('POST', '/schedules', { key: oslo.key, body: WEEKDAYS_AT_9 });

    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      schedule: expect.objectContaining({
        id: expect.any(String),
        kind: 'cron',
        action: REMIND,
        timeZone: 'Europe/Oslo',
        nextRunAt: expect.any(String),
        status: 'active',
      }),
    });
    const { schedule } = ScheduleResponse.parse(reply.body);
    // 09:00 on a weekday in Oslo, whatever the offset of the day.
    const next = new Date(schedule.nextRunAt ?? '');
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Oslo',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
    }).format(next);
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
    expect(next.getTime()).toBeGreaterThan(Date.now());
  });

  it('tells a user without a zone in UTC, and a zone given keeps', async () => {
    const nowhere = await newUser('nowhere');

    expect((await create(nowhere.key, WEEKDAYS_AT_9)).timeZone).toBe('UTC');
    expect(
      (await create(nowhere.key, { ...WEEKDAYS_AT_9, timeZone: 'America/New_York' })).timeZone,
    ).toBe('America/New_York');
  });

  it('makes a one-off reminder and an interval', async () => {
    const user = await newUser('kinds', 'Asia/Kolkata');
    const at = inHours(24);

    expect(await create(user.key, { kind: 'once', at, action: REMIND })).toMatchObject({
      kind: 'once',
      nextRunAt: at,
      status: 'active',
    });
    const every = await create(user.key, { kind: 'interval', everyMinutes: 90, action: REMIND });
    expect(every).toMatchObject({ kind: 'interval', everyMinutes: 90, status: 'active' });
    expect(Date.parse(every.nextRunAt ?? '')).toBeGreaterThan(Date.now());
  });

  it.each<[string, unknown, RegExp]>([
    ['a cron rule out of range', { ...WEEKDAYS_AT_9, cron: '61 9 * * *' }, /^cron: /],
    ['a cron rule that is not one', { ...WEEKDAYS_AT_9, cron: 'every day at nine' }, /^cron: /],
    ['an unknown zone', { ...WEEKDAYS_AT_9, timeZone: 'Mars/Olympus_Mons' }, /^timeZone: /],
    ['an instant in the past', { kind: 'once', at: inHours(-1), action: REMIND }, /^at: /],
    [
      'an end before the start',
      { ...WEEKDAYS_AT_9, startAt: inHours(48), endAt: inHours(24) },
      /^endAt: /,
    ],
    ['an end in the past', { ...WEEKDAYS_AT_9, endAt: inHours(-1) }, /^endAt: /],
    ['a rule of another kind', { kind: 'once', cron: '0 9 * * *', action: REMIND }, /^at: /],
    ['an unknown action', { ...WEEKDAYS_AT_9, action: { type: 'email' } }, /^action/],
    // The user is always the key's.
    ['a userId', { ...WEEKDAYS_AT_9, userId: randomUUID() }, /userId/],
  ])('answers 400 naming the field to %s, storing nothing', async (_label, body, message) => {
    const user = await newUser('careless', 'Europe/Oslo');

    expect(await call('POST', '/schedules', { key: user.key, body })).toEqual(badRequest(message));
    expect(await list(user.key)).toEqual([]);
  });
});

describe('a schedule of its own user only', () => {
  it("answers 404 to everything about another user's schedule, and changes nothing", async () => {
    const owner = await newUser('owner', 'Europe/Oslo');
    const other = await newUser('other', 'Europe/Oslo');
    const schedule = await create(owner.key, WEEKDAYS_AT_9);
    const path = `/schedules/${schedule.id}`;

    expect(await call('GET', path, { key: other.key })).toEqual(NOT_FOUND);
    expect(await call('PATCH', path, { key: other.key, body: { status: 'paused' } })).toEqual(
      NOT_FOUND,
    );
    expect(await call('DELETE', path, { key: other.key })).toEqual(NOT_FOUND);
    expect(await call('GET', `${path}/runs`, { key: other.key })).toEqual(NOT_FOUND);
    expect(await call('POST', `${path}/snooze`, { key: other.key, body: { minutes: 10 } })).toEqual(
      NOT_FOUND,
    );
    expect(await list(other.key)).toEqual([]);

    const kept = await call('GET', path, { key: owner.key });
    expect(ScheduleResponse.parse(kept.body).schedule).toEqual(schedule);
  });

  it('answers 404 to a schedule that does not exist', async () => {
    expect(await call('GET', `/schedules/${randomUUID()}`, { key: harness.alice.key })).toEqual(
      NOT_FOUND,
    );
  });

  it('answers 400 to an id that is not one', async () => {
    expect(await call('GET', '/schedules/nope', { key: harness.alice.key })).toEqual(
      badRequest(/^id: /),
    );
  });
});

describe('GET /v1/schedules', () => {
  it("lists the user's schedules soonest first, and by status", async () => {
    const user = await newUser('lister', 'Europe/Oslo');
    const later = await create(user.key, { kind: 'once', at: inHours(48), action: REMIND });
    const sooner = await create(user.key, { kind: 'once', at: inHours(2), action: REMIND });
    const paused = await create(user.key, { kind: 'once', at: inHours(3), action: REMIND });
    await call('PATCH', `/schedules/${paused.id}`, { key: user.key, body: { status: 'paused' } });

    expect((await list(user.key)).map((schedule) => schedule.id)).toEqual(
      expect.arrayContaining([sooner.id, later.id, paused.id]),
    );
    const active = await call('GET', '/schedules?status=active', { key: user.key });
    expect(SchedulesListResponse.parse(active.body).schedules.map((each) => each.id)).toEqual([
      sooner.id,
      later.id,
    ]);
    expect(await call('GET', '/schedules?status=gone', { key: user.key })).toEqual(
      badRequest(/^status: /),
    );
  });
});

describe('PATCH and DELETE /v1/schedules/{id}', () => {
  it('pauses and resumes', async () => {
    const user = await newUser('pauser', 'Europe/Oslo');
    const schedule = await create(user.key, WEEKDAYS_AT_9);
    const path = `/schedules/${schedule.id}`;

    const paused = await call('PATCH', path, { key: user.key, body: { status: 'paused' } });
    expect(paused.status).toBe(200);
    expect(ScheduleResponse.parse(paused.body).schedule.status).toBe('paused');

    const resumed = await call('PATCH', path, { key: user.key, body: { status: 'active' } });
    expect(resumed.status).toBe(200);
    expect(ScheduleResponse.parse(resumed.body).schedule).toMatchObject({
      status: 'active',
      nextRunAt: schedule.nextRunAt,
    });
  });

  it('edits the rule, checked as on create', async () => {
    const user = await newUser('editor', 'Europe/Oslo');
    const schedule = await create(user.key, WEEKDAYS_AT_9);
    const path = `/schedules/${schedule.id}`;

    expect(await call('PATCH', path, { key: user.key, body: { cron: '0 25 * * *' } })).toEqual(
      badRequest(/^cron: /),
    );
    const edited = await call('PATCH', path, {
      key: user.key,
      body: { cron: '30 7 * * *', timeZone: 'Asia/Kolkata' },
    });
    expect(ScheduleResponse.parse(edited.body).schedule).toMatchObject({
      cron: '30 7 * * *',
      timeZone: 'Asia/Kolkata',
    });
    // 07:30 in Kolkata (UTC+05:30, no DST) is 02:00 UTC.
    expect(ScheduleResponse.parse(edited.body).schedule.nextRunAt).toMatch(/T02:00:00\.000Z$/);
  });

  it('deletes with 204, after which it is gone', async () => {
    const user = await newUser('deleter', 'Europe/Oslo');
    const schedule = await create(user.key, WEEKDAYS_AT_9);
    const path = `/schedules/${schedule.id}`;

    const deleted = await call('DELETE', path, { key: user.key });
    expect(deleted).toEqual({ status: 204, body: undefined });
    expect(await call('GET', path, { key: user.key })).toEqual(NOT_FOUND);
    expect(await list(user.key)).toEqual([]);
  });
});

describe('GET /v1/schedules/{id}/runs and snooze', () => {
  it('holds a reminder that fired, with the message it posted', async () => {
    const user = await newUser('reminded', 'Europe/Oslo');
    const at = new Date(Date.now() + 1_500).toISOString();
    const schedule = await create(user.key, {
      kind: 'once',
      at,
      action: { type: 'remind', text: 'stretch your legs' },
    });
    const path = `/schedules/${schedule.id}`;
    expect(await call('GET', `${path}/runs`, { key: user.key })).toEqual({
      status: 200,
      body: { runs: [] },
    });
    expect(await call('POST', `${path}/snooze`, { key: user.key, body: { minutes: 5 } })).toEqual(
      expect.objectContaining({ status: 409 }),
    );

    const runs = await waitFor(
      async () => {
        const reply = await call('GET', `${path}/runs`, { key: user.key });
        const found = SchedulesRunsResponse.parse(reply.body).runs;
        return found[0]?.status === 'fired' ? found : undefined;
      },
      { timeoutMs: 20_000, what: 'the reminder to fire' },
    );
    expect(runs).toEqual([
      expect.objectContaining({
        scheduledFor: at,
        status: 'fired',
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        messageId: expect.any(String),
      }),
    ]);
    const fired = ScheduleResponse.parse((await call('GET', path, { key: user.key })).body);
    expect(fired.schedule).toMatchObject({ status: 'ended', nextRunAt: null, runCount: 1 });

    // Posted as the assistant into the user's persistent conversation.
    const conversations = await call('GET', '/conversations', { key: user.key });
    const { defaultConversationId } = conversations.body as { defaultConversationId: string };
    const messages = MemoryMessagesListResponse.parse(
      (await call('GET', `/conversations/${defaultConversationId}/messages`, { key: user.key }))
        .body,
    ).messages;
    expect(messages).toEqual([
      expect.objectContaining({
        id: runs[0]?.messageId,
        role: 'assistant',
        content: expect.stringContaining('stretch your legs'),
      }),
    ]);

    // Once it has fired, it can come back.
    const snoozed = await call('POST', `${path}/snooze`, { key: user.key, body: { minutes: 10 } });
    expect(snoozed.status).toBe(200);
    expect(ScheduleResponse.parse(snoozed.body).schedule.status).toBe('active');
    expect(await call('POST', `${path}/snooze`, { key: user.key, body: { minutes: 0 } })).toEqual(
      badRequest(/^minutes: /),
    );
  });

  it('refuses a bad page size', async () => {
    const user = await newUser('pager', 'Europe/Oslo');
    const schedule = await create(user.key, WEEKDAYS_AT_9);

    expect(await call('GET', `/schedules/${schedule.id}/runs?limit=0`, { key: user.key })).toEqual(
      badRequest(/^limit: /),
    );
  });
});

describe('GET /v1/schedules/preview', () => {
  it('answers the next fire times in UTC, across a DST change', async () => {
    // Friday 27 March 2026; Oslo moves from +01:00 to +02:00 on Sunday the 29th.
    const reply = await call(
      'GET',
      '/schedules/preview?cron=0%209%20*%20*%201-5&timeZone=Europe/Oslo&count=3&from=2026-03-27T00:00:00Z',
      { key: harness.alice.key },
    );

    expect(reply).toEqual({
      status: 200,
      body: {
        times: ['2026-03-27T08:00:00.000Z', '2026-03-30T07:00:00.000Z', '2026-03-31T07:00:00.000Z'],
      },
    });
  });

  it("counts from now in the user's zone by default", async () => {
    const user = await newUser('previewer', 'Asia/Kolkata');
    const reply = await call('GET', '/schedules/preview?cron=30%207%20*%20*%20*&count=3', {
      key: user.key,
    });

    const { times } = SchedulesPreviewResponse.parse(reply.body);
    expect(times).toHaveLength(3);
    for (const time of times) expect(time).toMatch(/T02:00:00\.000Z$/);
    expect(Date.parse(times[0] ?? '')).toBeGreaterThan(Date.now());
  });

  it.each([
    ['a bad rule', 'cron=0%2099%20*%20*%20*', /^cron: /],
    ['an unknown zone', 'cron=0%209%20*%20*%20*&timeZone=Nowhere/Special', /^timeZone: /],
    ['a count over 100', 'cron=0%209%20*%20*%20*&count=101', /^count: /],
    ['no rule', 'count=3', /^cron: /],
  ])('answers 400 to %s', async (_label, query, message) => {
    expect(await call('GET', `/schedules/preview?${query}`, { key: harness.alice.key })).toEqual(
      badRequest(message),
    );
  });
});
