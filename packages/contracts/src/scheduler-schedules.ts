import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, Timestamp, TimeZone } from './common';
import { defineEvent, defineRpc } from './define';
import { MissionTaskPlan } from './orchestrator-missions';

// Schedules: reminders, recurring jobs and scheduled agent work. The scheduler's Postgres rows are
// the source of truth; each occurrence is a run, unique on (schedule, scheduled-for instant), and
// its action is delivered with that run as its idempotency key, so it takes effect exactly once.

export const SCHEDULE_NAME_MAX_CHARS = 200;
export const SNOOZE_MAX_MINUTES = 7 * 24 * 60;
export const SCHEDULE_RUNS_MAX_LIMIT = 200;
export const PREVIEW_MAX_COUNT = 100;

// once: at an instant. cron: a 5-field rule (minute hour day-of-month month day-of-week) on the
// wall clock of a time zone. interval: every N minutes of elapsed time, across DST changes too.
export const ScheduleKind = z.enum(['once', 'cron', 'interval']);
export type ScheduleKind = z.infer<typeof ScheduleKind>;

// A 5-field cron rule. Its meaning is checked by the scheduler, which answers bad_request naming
// the field it cannot read.
export const CronRule = z
  .string()
  .trim()
  .max(200)
  .regex(/^\S+(\s+\S+){4}$/, 'five fields: minute hour day-of-month month day-of-week');

// remind: a text fixed when the reminder is made, posted to the conversation as the assistant.
// prompt: an agent turn on the instruction at that time, its reply posted as usual. mission: a
// mission with the objective (and plan, if given) starts.
export const ScheduleAction = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('remind'),
    text: z.string().trim().min(1, 'text must not be empty').max(4_000),
  }),
  z.strictObject({
    type: z.literal('prompt'),
    instruction: z.string().trim().min(1, 'instruction must not be empty').max(MESSAGE_MAX_CHARS),
  }),
  z.strictObject({
    type: z.literal('mission'),
    objective: z.string().trim().min(1, 'objective must not be empty').max(4_000),
    tasks: z.array(MissionTaskPlan).min(1).max(8).optional(),
  }),
]);
export type ScheduleAction = z.infer<typeof ScheduleAction>;

// skip: missed occurrences are recorded as missed. run_once: one catch-up run for everything
// missed (the default for reminders). run_all: each missed occurrence runs, at most
// missedMaxRuns of them. Each within graceMinutes of its time; older ones are recorded as missed.
export const MissedPolicy = z.enum(['skip', 'run_once', 'run_all']);
export type MissedPolicy = z.infer<typeof MissedPolicy>;

export const ScheduleStatus = z.enum(['active', 'paused', 'ended']);
export type ScheduleStatus = z.infer<typeof ScheduleStatus>;

// running: claimed, its action being delivered. fired: delivered. skipped: not run on purpose
// (the previous agent run still going, the daily cap reached, the skip policy). missed: past its
// grace window when the scheduler saw it. failed: the delivery failed for good.
export const ScheduleRunStatus = z.enum(['running', 'fired', 'skipped', 'missed', 'failed']);
export type ScheduleRunStatus = z.infer<typeof ScheduleRunStatus>;

// The fields a client sets. The kind's own field is required: at (once), cron (cron) or
// everyMinutes (interval); the others are refused.
const scheduleFieldsShape = {
  kind: ScheduleKind,
  at: Timestamp.optional(),
  cron: CronRule.optional(),
  // The cron rule's zone (default: the user's zone). Kept for every kind: it is the zone the
  // schedule's times are told in.
  timeZone: TimeZone.optional(),
  everyMinutes: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 60)
    .optional(),
  action: ScheduleAction,
  name: z.string().trim().min(1).max(SCHEDULE_NAME_MAX_CHARS).optional(),
  // Where reminders and replies go (default: the user's persistent conversation).
  conversationId: Id.optional(),
  missedPolicy: MissedPolicy.optional(),
  missedMaxRuns: z.number().int().min(1).max(100).optional(),
  graceMinutes: z
    .number()
    .int()
    .min(0)
    .max(7 * 24 * 60)
    .optional(),
  startAt: Timestamp.optional(),
  endAt: Timestamp.optional(),
  maxRuns: z.number().int().min(1).max(1_000_000).optional(),
};

const KIND_FIELD = { once: 'at', cron: 'cron', interval: 'everyMinutes' } as const;

export const ScheduleFields = z.strictObject(scheduleFieldsShape).superRefine((fields, ctx) => {
  for (const [kind, field] of Object.entries(KIND_FIELD)) {
    const isPresent = fields[field] !== undefined;
    if (kind === fields.kind && !isPresent) {
      ctx.addIssue({ code: 'custom', path: [field], message: `${field} is required for ${kind}` });
    } else if (kind !== fields.kind && isPresent) {
      ctx.addIssue({ code: 'custom', path: [field], message: `${field} is only for ${kind}` });
    }
  }
  if (fields.startAt && fields.endAt && Date.parse(fields.endAt) <= Date.parse(fields.startAt)) {
    ctx.addIssue({ code: 'custom', path: ['endAt'], message: 'endAt must be after startAt' });
  }
});
export type ScheduleFields = z.input<typeof ScheduleFields>;

export const Schedule = z.object({
  id: Id,
  kind: ScheduleKind,
  name: z.string().nullable(),
  action: ScheduleAction,
  at: Timestamp.nullable(),
  cron: z.string().nullable(),
  everyMinutes: z.number().int().nullable(),
  timeZone: z.string(),
  conversationId: Id.nullable(),
  missedPolicy: MissedPolicy,
  missedMaxRuns: z.number().int(),
  graceMinutes: z.number().int(),
  startAt: Timestamp.nullable(),
  endAt: Timestamp.nullable(),
  maxRuns: z.number().int().nullable(),
  // Occurrences that ran (fired or failed), counted against maxRuns.
  runCount: z.number().int().nonnegative(),
  // Null once the schedule has ended.
  nextRunAt: Timestamp.nullable(),
  // nextRunAt on the wall clock of timeZone ("Tuesday 3 December, 09:00 Oslo time"): one wording
  // of a time for every client that tells it to the user, so they can correct it.
  nextRunText: z.string().nullable(),
  status: ScheduleStatus,
  // user: through the API; model: through the schedule_create tool.
  createdBy: z.enum(['user', 'model']),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type Schedule = z.infer<typeof Schedule>;

export const ScheduleRun = z.object({
  id: Id,
  scheduleId: Id,
  scheduledFor: Timestamp,
  startedAt: Timestamp.nullable(),
  finishedAt: Timestamp.nullable(),
  status: ScheduleRunStatus,
  // A reminder's message, a prompt's run or a mission, as the action produced it.
  messageId: Id.optional(),
  runId: Id.optional(),
  missionId: Id.optional(),
  // Why it was skipped, missed or failed.
  reason: z.string().optional(),
});
export type ScheduleRun = z.infer<typeof ScheduleRun>;

export const ScheduleResponse = z.object({ schedule: Schedule });
export type ScheduleResponse = z.infer<typeof ScheduleResponse>;

// The user's own zone, which the gateway passes along: the default zone of a new schedule. Until
// the user sets one it is UTC, and isUserTimeZoneSet says so (the first reminder's answer tells).
const userZoneShape = {
  userTimeZone: TimeZone.default('UTC'),
  isUserTimeZoneSet: z.boolean().default(false),
};

// scheduler.schedules.create. bad_request names the field: an invalid cron rule, an instant in
// the past, an end before the start, more schedules than the per-user limit, agent work more
// often than the minimum interval or beyond the daily cap. A conversationId that is not one of
// the user's conversations answers not_found, naming it (update too).
export const SchedulesCreateRequest = z.object({
  userId: Id,
  ...userZoneShape,
  createdBy: z.enum(['user', 'model']).default('user'),
  // The run whose tool call made it (createdBy model).
  sourceRunId: Id.optional(),
  schedule: ScheduleFields,
});
export type SchedulesCreateRequest = z.input<typeof SchedulesCreateRequest>;
export const schedulerSchedulesCreate = defineRpc(
  'scheduler.schedules.create',
  SchedulesCreateRequest,
  ScheduleResponse,
);

export const SchedulesListRequest = z.object({ userId: Id, status: ScheduleStatus.optional() });
export type SchedulesListRequest = z.input<typeof SchedulesListRequest>;
export const SchedulesListResponse = z.object({ schedules: z.array(Schedule) });
export type SchedulesListResponse = z.infer<typeof SchedulesListResponse>;
// The user's schedules, soonest next run first, then ended ones newest first.
export const schedulerSchedulesList = defineRpc(
  'scheduler.schedules.list',
  SchedulesListRequest,
  SchedulesListResponse,
);

// Another user's schedule is not_found.
export const ScheduleIdRequest = z.object({ userId: Id, id: Id });
export type ScheduleIdRequest = z.input<typeof ScheduleIdRequest>;
export const schedulerSchedulesGet = defineRpc(
  'scheduler.schedules.get',
  ScheduleIdRequest,
  ScheduleResponse,
);

// Edit, pause (status paused) or resume (status active). The rule's fields are checked as on
// create; a changed rule's next run is computed from now.
export const ScheduleChanges = z.strictObject({
  status: z.enum(['active', 'paused']).optional(),
  name: z.string().trim().min(1).max(SCHEDULE_NAME_MAX_CHARS).nullable().optional(),
  action: ScheduleAction.optional(),
  at: Timestamp.optional(),
  cron: CronRule.optional(),
  timeZone: TimeZone.optional(),
  everyMinutes: scheduleFieldsShape.everyMinutes,
  missedPolicy: MissedPolicy.optional(),
  missedMaxRuns: scheduleFieldsShape.missedMaxRuns,
  graceMinutes: scheduleFieldsShape.graceMinutes,
  endAt: Timestamp.nullable().optional(),
  maxRuns: z.number().int().min(1).max(1_000_000).nullable().optional(),
  // Another of the user's conversations; null: back to the persistent one.
  conversationId: Id.nullable().optional(),
});
export type ScheduleChanges = z.input<typeof ScheduleChanges>;
export const SchedulesUpdateRequest = z.object({
  userId: Id,
  id: Id,
  ...userZoneShape,
  changes: ScheduleChanges,
});
export type SchedulesUpdateRequest = z.input<typeof SchedulesUpdateRequest>;
export const schedulerSchedulesUpdate = defineRpc(
  'scheduler.schedules.update',
  SchedulesUpdateRequest,
  ScheduleResponse,
);

// Deletes the schedule and its history.
export const schedulerSchedulesDelete = defineRpc(
  'scheduler.schedules.delete',
  ScheduleIdRequest,
  z.object({}),
);

// A reminder that has fired comes again after `minutes`, once; a recurring one keeps its rule
// for the occurrences after. A schedule that is not a reminder, or has not fired yet, answers
// conflict.
export const SchedulesSnoozeRequest = z.object({
  userId: Id,
  id: Id,
  minutes: z.number().int().min(1).max(SNOOZE_MAX_MINUTES),
});
export type SchedulesSnoozeRequest = z.input<typeof SchedulesSnoozeRequest>;
export const schedulerSchedulesSnooze = defineRpc(
  'scheduler.schedules.snooze',
  SchedulesSnoozeRequest,
  ScheduleResponse,
);

const runsListFields = {
  limit: z.number().int().min(1).max(SCHEDULE_RUNS_MAX_LIMIT).default(50),
  // Cursor: only runs scheduled before this instant (the previous page's nextBefore).
  before: Timestamp.optional(),
};
// A schedule's history, newest scheduled-for first.
export const SchedulesRunsRequest = z.object({ userId: Id, id: Id, ...runsListFields });
export type SchedulesRunsRequest = z.input<typeof SchedulesRunsRequest>;
export const SchedulesRunsResponse = z.object({
  runs: z.array(ScheduleRun),
  nextBefore: Timestamp.optional(),
});
export type SchedulesRunsResponse = z.infer<typeof SchedulesRunsResponse>;
export const schedulerSchedulesRuns = defineRpc(
  'scheduler.schedules.runs',
  SchedulesRunsRequest,
  SchedulesRunsResponse,
);

// The next `count` fire times of a cron rule in a zone, after `from` (default now).
export const SchedulesPreviewRequest = z.object({
  ...userZoneShape,
  cron: CronRule,
  timeZone: TimeZone.optional(),
  from: Timestamp.optional(),
  count: z.number().int().min(1).max(PREVIEW_MAX_COUNT).default(5),
});
export type SchedulesPreviewRequest = z.input<typeof SchedulesPreviewRequest>;
export const SchedulesPreviewResponse = z.object({ times: z.array(z.iso.datetime()) });
export type SchedulesPreviewResponse = z.infer<typeof SchedulesPreviewResponse>;
export const schedulerSchedulesPreview = defineRpc(
  'scheduler.schedules.preview',
  SchedulesPreviewRequest,
  SchedulesPreviewResponse,
);

// Core NATS: a schedule's next run changed. Every scheduler replica hears it and sets its wake-up
// to the earliest due time again, so a new reminder due in two seconds is not left to a timer set
// before it existed.
export const SchedulesChanged = z.object({ nextRunAt: Timestamp.nullable() });
export const schedulesChanged = defineEvent('scheduler.schedules.changed', SchedulesChanged);

// HTTP: the query and path parameters of /v1/schedules.
export const ScheduleIdParams = z.strictObject({ id: Id });
export const SchedulesListQuery = z.strictObject({ status: ScheduleStatus.optional() });
export const SchedulesRunsQuery = z.strictObject({
  ...runsListFields,
  limit: z.coerce.number().int().min(1).max(SCHEDULE_RUNS_MAX_LIMIT).optional(),
});
export const SchedulesPreviewQuery = z.strictObject({
  cron: CronRule,
  timeZone: TimeZone.optional(),
  from: Timestamp.optional(),
  count: z.coerce.number().int().min(1).max(PREVIEW_MAX_COUNT).optional(),
});
export const SnoozeBody = z.strictObject({
  minutes: z.number().int().min(1).max(SNOOZE_MAX_MINUTES),
});
