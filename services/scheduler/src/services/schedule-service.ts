import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import {
  memoryMessagesList,
  type ScheduleIdRequest,
  type SchedulesCreateRequest,
  type SchedulesPreviewRequest,
  type SchedulesRunsRequest,
  type SchedulesSnoozeRequest,
  type SchedulesUpdateRequest,
  schedulesChanged,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import type { z } from 'zod';
import { hasFiredRun, listRuns, type RunRecord } from '../repositories/runs-repository';
import {
  countLiveSchedules,
  deleteSchedule,
  findSchedule,
  insertSchedule,
  listLiveAgentSchedules,
  listSchedules,
  lockUserSchedules,
  type ScheduleRecord,
  type StoredSchedule,
  saveSchedule,
} from '../repositories/schedules-repository';
import { checkCron, maxRunsPerDay, nextOccurrence, type Rule, shortestGapMinutes } from '../rules';
import { occurrenceAfter } from './occurrences';
import { dueAt } from './schedule-views';

// Creating, changing and reading schedules: the checks of every rule and limit, each refusal a
// bad_request that names the field, before anything is stored.

export type ScheduleLimits = {
  maxSchedulesPerUser: number;
  agentRunsPerDay: number;
  agentMinIntervalMinutes: number;
  reminderGraceMinutes: number;
  agentGraceMinutes: number;
  missedMaxRuns: number;
};

export type ScheduleDeps = { bus: Bus; pool: Pool; limits: ScheduleLimits };

type CreateRequest = z.output<typeof SchedulesCreateRequest>;
type UpdateRequest = z.output<typeof SchedulesUpdateRequest>;
type Changes = UpdateRequest['changes'];

const KIND_FIELD = { once: 'at', cron: 'cron', interval: 'everyMinutes' } as const;
const DAY_MS = 24 * 3600_000;
const MEMORY_TIMEOUT_MS = 5_000;

function badRequest(message: string): BusError {
  return new BusError('bad_request', message);
}

function notFound(): BusError {
  return new BusError('not_found', 'schedule not found');
}

export function isAgentWork(schedule: StoredSchedule): schedule is ScheduleRecord {
  return schedule.action.type === 'prompt' || schedule.action.type === 'mission';
}

// A schedule posts to the conversation it names, so it must be the user's own. Memory answers
// another user's conversation exactly like a missing one; asked before any transaction begins,
// so that no lock waits on it.
async function checkConversation(bus: Bus, userId: string, conversationId: string): Promise<void> {
  try {
    await bus.request(
      memoryMessagesList,
      { userId, conversationId, limit: 1 },
      { timeoutMs: MEMORY_TIMEOUT_MS },
    );
  } catch (error) {
    if (error instanceof BusError && error.code === 'not_found') {
      throw new BusError('not_found', `conversationId: no conversation ${conversationId} of yours`);
    }
    throw error;
  }
}

function cronRule(cron: string, timeZone: string): Rule {
  const problem = checkCron(cron);
  if (problem) throw badRequest(problem);
  return { kind: 'cron', cron, timeZone };
}

function checkFuture(field: string, instant: Date, now: Date): void {
  if (instant <= now) throw badRequest(`${field}: must be in the future`);
}

// Why a schedule that should run has no occurrence left, naming the field to change.
function explainNoOccurrence(schedule: ScheduleRecord, now: Date): string {
  const { rule } = schedule;
  if (schedule.maxRuns !== null && schedule.runCount >= schedule.maxRuns) {
    return `maxRuns: all ${schedule.maxRuns} runs have been made`;
  }
  if (schedule.endAt && schedule.endAt <= now) return 'endAt: must be in the future';
  const unbounded = occurrenceAfter({ ...schedule, endAt: null }, now);
  if (unbounded && schedule.endAt) {
    return `endAt: before the first occurrence, ${unbounded.toISOString()}`;
  }
  if (rule.kind === 'once') {
    return rule.at <= now ? 'at: must be in the future' : 'startAt: after at, the only occurrence';
  }
  return `${KIND_FIELD[rule.kind]}: the rule has no occurrence after ${now.toISOString()}`;
}

// The schedule's next run from now on, or null when its end or run count leave none.
function firstRun(schedule: ScheduleRecord, now: Date): Date | null {
  if (schedule.maxRuns !== null && schedule.runCount >= schedule.maxRuns) return null;
  return occurrenceAfter(schedule, now);
}

// At most how many runs the schedule may start in any 24 hours.
function runsPerDay(schedule: ScheduleRecord): number {
  const perDay = maxRunsPerDay(schedule.rule);
  if (schedule.maxRuns === null) return perDay;
  return Math.min(perDay, Math.max(schedule.maxRuns - schedule.runCount, 0));
}

// The most one-shot instants that fall within one 24-hour window.
function peakOnceRunsPerDay(instants: Date[]): number {
  const times = instants.map((instant) => instant.getTime()).sort((a, b) => a - b);
  let peak = 0;
  let start = 0;
  for (let end = 0; end < times.length; end += 1) {
    while ((times[end] ?? 0) - (times[start] ?? 0) >= DAY_MS) start += 1;
    peak = Math.max(peak, end - start + 1);
  }
  return peak;
}

// Scheduled agent work costs model calls without anyone asking: a minimum interval per schedule
// and a daily cap over all of a user's schedules bound it, on top of the model budgets.
function checkAgentLimits(
  schedule: ScheduleRecord,
  // The user's live agent work, this schedule's stored version among it when it exists.
  others: ScheduleRecord[],
  limits: ScheduleLimits,
): void {
  const field = KIND_FIELD[schedule.kind];
  const gap = shortestGapMinutes(schedule.rule);
  if (gap < limits.agentMinIntervalMinutes) {
    throw badRequest(
      `${field}: agent work (prompt, mission) may run at most every ` +
        `${limits.agentMinIntervalMinutes} minutes; this rule runs ${gap} minutes apart`,
    );
  }
  const own = runsPerDay(schedule);
  if (own > limits.agentRunsPerDay) {
    throw badRequest(
      `${field}: this rule runs up to ${own} times a day; agent work (prompt, mission) may run ` +
        `at most ${limits.agentRunsPerDay} times a day`,
    );
  }
  const agentWork = [...others.filter((other) => other.id !== schedule.id), schedule];
  const onceAt = agentWork.flatMap((other) => (other.rule.kind === 'once' ? [other.rule.at] : []));
  const recurring = agentWork
    .filter((other) => other.rule.kind !== 'once')
    .reduce((sum, other) => sum + runsPerDay(other), 0);
  const total = recurring + peakOnceRunsPerDay(onceAt);
  if (total > limits.agentRunsPerDay) {
    throw badRequest(
      `schedules: your agent work (prompt, mission) could run ${total} times in a day, more ` +
        `than the ${limits.agentRunsPerDay} allowed`,
    );
  }
}

function checkScheduleCount(live: number, limits: ScheduleLimits): void {
  if (live >= limits.maxSchedulesPerUser) {
    throw badRequest(
      `schedules: at most ${limits.maxSchedulesPerUser} active or paused per user; delete some`,
    );
  }
}

// Every replica's engine sets its wake-up again: a reminder due in two seconds must not wait for
// a timer set before it existed.
function announceChange(bus: Bus, schedule: ScheduleRecord): void {
  const due = schedule.status === 'active' ? dueAt(schedule) : null;
  if (!due) return;
  try {
    bus.publish(schedulesChanged.subject, schedulesChanged.payload, {
      nextRunAt: due.toISOString(),
    });
  } catch (error) {
    // The engine's longest sleep heals a lost wake-up; the change itself is stored.
    bus.logger.warn({ err: error }, 'could not announce a schedule change');
  }
}

function buildRule(
  fields: Pick<CreateRequest['schedule'], 'kind' | 'at' | 'cron' | 'everyMinutes'>,
  timeZone: string,
  anchor: Date,
): Rule {
  // The contract has made sure the kind's own field is there.
  if (fields.kind === 'once' && fields.at) return { kind: 'once', at: new Date(fields.at) };
  if (fields.kind === 'cron' && fields.cron) return cronRule(fields.cron, timeZone);
  if (fields.kind === 'interval' && fields.everyMinutes) {
    return { kind: 'interval', everyMinutes: fields.everyMinutes, anchor };
  }
  throw badRequest(`${KIND_FIELD[fields.kind]}: is required for ${fields.kind}`);
}

export async function createSchedule(
  deps: ScheduleDeps,
  request: CreateRequest,
): Promise<ScheduleRecord> {
  const { limits } = deps;
  const fields = request.schedule;
  const now = new Date();
  const timeZone = fields.timeZone ?? request.userTimeZone;
  const startAt = fields.startAt ? new Date(fields.startAt) : null;
  const endAt = fields.endAt ? new Date(fields.endAt) : null;
  if (fields.at) checkFuture('at', new Date(fields.at), now);
  if (endAt) checkFuture('endAt', endAt, now);
  const isReminder = fields.action.type === 'remind';
  const schedule: ScheduleRecord = {
    id: randomUUID(),
    userId: request.userId,
    kind: fields.kind,
    name: fields.name ?? null,
    action: fields.action,
    rule: buildRule(fields, timeZone, startAt ?? now),
    timeZone,
    conversationId: fields.conversationId ?? null,
    // A reminder late is still worth having; a briefing for a morning long gone is not.
    missedPolicy: fields.missedPolicy ?? (isReminder ? 'run_once' : 'skip'),
    missedMaxRuns: fields.missedMaxRuns ?? limits.missedMaxRuns,
    graceMinutes:
      fields.graceMinutes ?? (isReminder ? limits.reminderGraceMinutes : limits.agentGraceMinutes),
    startAt,
    endAt,
    maxRuns: fields.maxRuns ?? null,
    runCount: 0,
    nextRunAt: null,
    snoozeAt: null,
    status: 'active',
    createdBy: request.createdBy,
    sourceRunId: request.sourceRunId ?? null,
    createdAt: now,
    updatedAt: now,
  };
  schedule.nextRunAt = firstRun(schedule, now);
  if (!schedule.nextRunAt) throw badRequest(explainNoOccurrence(schedule, now));
  if (schedule.conversationId) {
    await checkConversation(deps.bus, schedule.userId, schedule.conversationId);
  }
  await withTransaction(deps.pool, async (client) => {
    await lockUserSchedules(client, schedule.userId);
    checkScheduleCount(await countLiveSchedules(client, schedule.userId), limits);
    if (isAgentWork(schedule)) {
      checkAgentLimits(schedule, await listLiveAgentSchedules(client, schedule.userId), limits);
    }
    await insertSchedule(client, schedule);
  });
  announceChange(deps.bus, schedule);
  return schedule;
}

// The rule with the changes applied; the kind stays, and only its own fields may change.
function changedRule(current: ScheduleRecord, changes: Changes): Rule {
  const fields = { at: changes.at, cron: changes.cron, everyMinutes: changes.everyMinutes };
  for (const [field, value] of Object.entries(fields)) {
    if (value !== undefined && field !== KIND_FIELD[current.kind]) {
      throw badRequest(`${field}: not for a schedule of kind ${current.kind}`);
    }
  }
  const { rule } = current;
  const timeZone = changes.timeZone ?? current.timeZone;
  if (rule.kind === 'once') return changes.at ? { kind: 'once', at: new Date(changes.at) } : rule;
  if (rule.kind === 'cron') return cronRule(changes.cron ?? rule.cron, timeZone);
  return { ...rule, everyMinutes: changes.everyMinutes ?? rule.everyMinutes };
}

function isRuleChange(current: ScheduleRecord, changes: Changes): boolean {
  return (
    changes.at !== undefined ||
    changes.cron !== undefined ||
    changes.everyMinutes !== undefined ||
    (current.kind === 'cron' && changes.timeZone !== undefined)
  );
}

// Edit, pause or resume. A changed rule, end or run limit, and a resume, compute the next run
// from now: occurrences while paused are not made up for.
export async function updateSchedule(
  deps: ScheduleDeps,
  request: UpdateRequest,
): Promise<ScheduleRecord> {
  const { changes } = request;
  const now = new Date();
  if (changes.conversationId) {
    await checkConversation(deps.bus, request.userId, changes.conversationId);
  }
  const updated = await withTransaction(deps.pool, async (client) => {
    await lockUserSchedules(client, request.userId);
    const current = await findSchedule(client, request.userId, request.id, { forUpdate: true });
    if (!current) throw notFound();
    if (changes.at) checkFuture('at', new Date(changes.at), now);
    const endAt =
      changes.endAt === undefined
        ? current.endAt
        : changes.endAt === null
          ? null
          : new Date(changes.endAt);
    if (changes.endAt) checkFuture('endAt', new Date(changes.endAt), now);
    if (endAt && current.startAt && endAt <= current.startAt) {
      throw badRequest('endAt: must be after startAt');
    }
    const isRuleChanged = isRuleChange(current, changes);
    const isResumed = changes.status === 'active' && current.status !== 'active';
    const next: ScheduleRecord = {
      ...current,
      name: changes.name === undefined ? current.name : changes.name,
      action: changes.action ?? current.action,
      conversationId:
        changes.conversationId === undefined ? current.conversationId : changes.conversationId,
      rule: changedRule(current, changes),
      timeZone: changes.timeZone ?? current.timeZone,
      missedPolicy: changes.missedPolicy ?? current.missedPolicy,
      missedMaxRuns: changes.missedMaxRuns ?? current.missedMaxRuns,
      graceMinutes: changes.graceMinutes ?? current.graceMinutes,
      endAt,
      maxRuns: changes.maxRuns === undefined ? current.maxRuns : changes.maxRuns,
      status:
        changes.status ?? (current.status === 'ended' && isRuleChanged ? 'active' : current.status),
      updatedAt: now,
    };
    const isBoundChanged = changes.endAt !== undefined || changes.maxRuns !== undefined;
    if (isRuleChanged || isResumed || isBoundChanged) next.nextRunAt = firstRun(next, now);
    if (next.status === 'active' && !dueAt(next)) {
      // Asked to run again with nothing left to run: say what to change. A new end or run
      // limit that leaves nothing simply ends it.
      if (isRuleChanged || isResumed) throw badRequest(explainNoOccurrence(next, now));
      next.status = 'ended';
    }
    if (current.status === 'ended' && next.status !== 'ended') {
      checkScheduleCount(await countLiveSchedules(client, request.userId), deps.limits);
    }
    const isAgentChange =
      isAgentWork(next) &&
      next.status !== 'ended' &&
      (isRuleChanged || isResumed || isBoundChanged || !isAgentWork(current));
    if (isAgentChange) {
      checkAgentLimits(next, await listLiveAgentSchedules(client, request.userId), deps.limits);
    }
    await saveSchedule(client, next);
    return next;
  });
  announceChange(deps.bus, updated);
  return updated;
}

// A reminder that has fired comes again once, `minutes` from now; its rule goes on as before.
export async function snoozeSchedule(
  deps: ScheduleDeps,
  request: z.output<typeof SchedulesSnoozeRequest>,
): Promise<ScheduleRecord> {
  const now = new Date();
  const snoozed = await withTransaction(deps.pool, async (client) => {
    const current = await findSchedule(client, request.userId, request.id, { forUpdate: true });
    if (!current) throw notFound();
    if (current.action.type !== 'remind') {
      throw new BusError('conflict', 'only a reminder (action remind) can be snoozed');
    }
    if (current.status === 'paused') {
      throw new BusError('conflict', 'the schedule is paused; resume it first');
    }
    if (!(await hasFiredRun(client, current.id))) {
      throw new BusError('conflict', 'the reminder has not fired yet');
    }
    const next: ScheduleRecord = {
      ...current,
      snoozeAt: new Date(now.getTime() + request.minutes * 60_000),
      status: 'active',
      updatedAt: now,
    };
    await saveSchedule(client, next);
    return next;
  });
  announceChange(deps.bus, snoozed);
  return snoozed;
}

export async function getSchedule(
  pool: Pool,
  request: z.output<typeof ScheduleIdRequest>,
): Promise<ScheduleRecord> {
  const schedule = await findSchedule(pool, request.userId, request.id);
  if (!schedule) throw notFound();
  return schedule;
}

export async function removeSchedule(
  pool: Pool,
  request: z.output<typeof ScheduleIdRequest>,
): Promise<void> {
  if (!(await deleteSchedule(pool, request.userId, request.id))) throw notFound();
}

export function listUserSchedules(
  pool: Pool,
  userId: string,
  status: ScheduleRecord['status'] | undefined,
): Promise<ScheduleRecord[]> {
  return listSchedules(pool, userId, status);
}

export async function listScheduleRuns(
  pool: Pool,
  request: z.output<typeof SchedulesRunsRequest>,
): Promise<{ runs: RunRecord[]; nextBefore: Date | undefined }> {
  await getSchedule(pool, request);
  // One more than asked: whether it exists tells if another page follows.
  const runs = await listRuns(pool, request.userId, request.id, {
    limit: request.limit + 1,
    before: request.before ? new Date(request.before) : undefined,
  });
  const page = runs.slice(0, request.limit);
  const last = page.at(-1);
  return { runs: page, nextBefore: runs.length > request.limit ? last?.scheduledFor : undefined };
}

// The next fire times of a cron rule, as a schedule of it would fire.
export function previewCron(request: z.output<typeof SchedulesPreviewRequest>): Date[] {
  const rule = cronRule(request.cron, request.timeZone ?? request.userTimeZone);
  const times: Date[] = [];
  let after = request.from ? new Date(request.from) : new Date();
  while (times.length < request.count) {
    const next = nextOccurrence(rule, after);
    if (!next) break;
    times.push(next);
    after = next;
  }
  return times;
}
