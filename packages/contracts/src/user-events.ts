import { z } from 'zod';
import { Id } from './common';
import { AlertStatus } from './http/admin-alerts';
import { Approval } from './orchestrator-approvals';
import { MissionStatus, MissionTaskStatus } from './orchestrator-missions';
import { ScheduleKind, ScheduleRun } from './scheduler-schedules';

// What happens for a user away from any turn they are watching: an approval a run waits for, a
// mission moving on, a schedule firing. Producers publish to JetStream stream
// USER_EVENTS on user-events.<userId>; GET /v1/events streams the user's subject, with the
// stream sequence as the event id, so a client that reconnects misses nothing kept.

export const USER_EVENTS_STREAM = {
  stream: 'USER_EVENTS',
  subjects: userEventSubject('*'),
  // A client away longer than this misses what happened meanwhile (the state itself stays
  // readable: /v1/approvals, /v1/missions).
  maxAgeMs: 24 * 3600_000,
};

const Timestamp = z.iso.datetime({ offset: true });

// Longest text an event carries (a report, a reply): enough for any notification, far below
// NATS's message limit.
export const USER_EVENT_TEXT_MAX_CHARS = 4_000;

const ApprovalRequested = z.object({
  type: z.literal('approval_requested'),
  occurredAt: Timestamp,
  // Decide with POST /v1/approvals/{id}.
  approval: Approval,
});

const MissionUpdated = z.object({
  type: z.literal('mission_updated'),
  occurredAt: Timestamp,
  mission: z.object({
    id: Id,
    objective: z.string(),
    status: MissionStatus,
    conversationId: Id,
  }),
  // started: created (planning, or running a given plan). task_finished: `task` completed or
  // failed. ended: completed, failed or cancelled, and its report is the message reportMessageId.
  change: z.enum(['started', 'task_finished', 'ended']),
  task: z
    .object({
      id: Id,
      number: z.number().int().min(1),
      title: z.string(),
      status: MissionTaskStatus,
    })
    .optional(),
  reportMessageId: Id.optional(),
  // ended: the report's text, cut to USER_EVENT_TEXT_MAX_CHARS, for channels that show it.
  report: z.string().max(USER_EVENT_TEXT_MAX_CHARS).optional(),
});

// A mission's task asked its user a question (ask_user) and waits for the answer: given with
// POST /v1/missions/{id}/answer, or as the user's next message in the mission's conversation,
// where the question is also posted (messageId). Unanswered by expiresAt, the task goes on
// without it.
const MissionQuestionAsked = z.object({
  type: z.literal('mission_question'),
  occurredAt: Timestamp,
  mission: z.object({
    id: Id,
    objective: z.string(),
    status: MissionStatus,
    conversationId: Id,
  }),
  question: z.object({
    id: Id,
    taskId: Id,
    // Cut to USER_EVENT_TEXT_MAX_CHARS.
    text: z.string().max(USER_EVENT_TEXT_MAX_CHARS),
    messageId: Id,
    expiresAt: Timestamp,
  }),
});

// An occurrence of a schedule ran (or was skipped, missed or failed): a reminder's message is in
// the conversation, a prompt's turn or a mission has started.
const ScheduleFired = z.object({
  type: z.literal('schedule_fired'),
  occurredAt: Timestamp,
  schedule: z.object({
    id: Id,
    name: z.string().nullable(),
    kind: ScheduleKind,
    actionType: z.enum(['remind', 'prompt', 'mission']),
    // The schedule's next occurrence, if any.
    nextRunAt: Timestamp.nullable(),
  }),
  run: ScheduleRun,
  // Where the action went; for a run that did not fire, the schedule's conversation, absent when
  // that is the user's persistent one.
  conversationId: Id.optional(),
  // The reminder's text (remind only), posted to the conversation when the run fired.
  text: z.string().optional(),
});

// Scheduled agent work (a prompt's turn) ended: its reply is in the conversation. Published by
// the orchestrator when a turn submitted with a scheduleId ends.
const ScheduleResult = z.object({
  type: z.literal('schedule_result'),
  occurredAt: Timestamp,
  scheduleId: Id,
  turnId: Id,
  conversationId: Id,
  status: z.enum(['done', 'failed']),
  // done: the reply, cut to USER_EVENT_TEXT_MAX_CHARS; failed: why, as the turn told it.
  text: z.string().max(USER_EVENT_TEXT_MAX_CHARS),
});

// An operations alert from the install's Grafana (POST /v1/admin/alerts), told to the admin
// whose key posted it: one event per alert and status.
const OpsAlert = z.object({
  type: z.literal('ops_alert'),
  // firing: when it started; resolved: when it ended.
  occurredAt: Timestamp,
  alert: z.object({
    status: AlertStatus,
    // The rule's name (the alertname label).
    name: z.string().max(USER_EVENT_TEXT_MAX_CHARS),
    labels: z.record(z.string(), z.string()),
    // The rule's summary and description annotations, cut to USER_EVENT_TEXT_MAX_CHARS.
    summary: z.string().max(USER_EVENT_TEXT_MAX_CHARS).optional(),
    description: z.string().max(USER_EVENT_TEXT_MAX_CHARS).optional(),
    startsAt: Timestamp,
    endsAt: Timestamp.optional(),
    fingerprint: z.string(),
    // Into the install's own Grafana (GRAFANA_URL), never a link the payload named elsewhere.
    url: z.url({ protocol: /^https?$/ }).optional(),
  }),
});

// Clients skip types they do not know.
export const UserEvent = z.discriminatedUnion('type', [
  ApprovalRequested,
  MissionUpdated,
  MissionQuestionAsked,
  ScheduleFired,
  ScheduleResult,
  OpsAlert,
]);
export type UserEvent = z.infer<typeof UserEvent>;

// GET /v1/events: the id of the last event the client saw, to go on right after it.
export const UserEventsHeaders = z.strictObject({
  'Last-Event-ID': z
    .string()
    .regex(/^\d{1,15}$/, 'the id of an event of this stream')
    .transform(Number)
    .optional(),
});

// One user's subject; the stream holds every user's.
export function userEventSubject(userId: string): string {
  return `user-events.${userId}`;
}
