import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, Timestamp, TimeZone, Usage } from './common';
import { defineEvent, defineRpc } from './define';
import { ErrorInfo } from './errors';
import { SkillName } from './memory-skills';

// Missions: an objective worked on in the background as a plan of tasks. Each task runs as its
// own run (a sub-run, in parallel where the plan allows) with a brief of its own; a report of
// their results is posted to the conversation.

export const MISSION_MAX_TASKS = 8;
export const MISSION_TASK_MAX_SKILLS = 20;
export const MISSION_LIST_MAX_LIMIT = 100;

// planning: a model is writing the plan. reporting: every task has ended; the report is being
// written.
export const MissionStatus = z.enum([
  'planning',
  'running',
  'reporting',
  'completed',
  'failed',
  'cancelled',
]);
export type MissionStatus = z.infer<typeof MissionStatus>;

// queued: its dependencies are done and it waits for a worker. waiting: it asked its user a
// question (ask_user) and goes on once they answer or the question expires. skipped: a task it
// depends on did not complete, or the mission ended first.
export const MissionTaskStatus = z.enum([
  'pending',
  'queued',
  'running',
  'waiting',
  'completed',
  'failed',
  'skipped',
]);
export type MissionTaskStatus = z.infer<typeof MissionTaskStatus>;

const ToolName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'a tool name is letters, digits, _ and -');

// A task as a plan gives it. dependsOn holds the numbers (from 1, in plan order) of earlier tasks
// whose results this one needs; tasks without a dependency between them run in parallel.
export const MissionTaskPlan = z.strictObject({
  title: z.string().trim().min(1).max(200),
  brief: z.string().trim().min(1).max(4_000),
  dependsOn: z
    .array(z.number().int().min(1).max(MISSION_MAX_TASKS))
    .max(MISSION_MAX_TASKS)
    .default([]),
  // The tools this task may use (default: every tool that needs no approval).
  tools: z.array(ToolName).max(50).optional(),
  // The skills (names from the user's skills index) this task may load with skill_load; a task
  // sees no skill it is not given (default: none).
  skills: z.array(SkillName).max(MISSION_TASK_MAX_SKILLS).optional(),
});
export type MissionTaskPlan = z.input<typeof MissionTaskPlan>;

// A task may depend only on tasks before it, so a plan has no cycle by construction.
const MissionPlan = z
  .array(MissionTaskPlan)
  .min(1)
  .max(MISSION_MAX_TASKS)
  .superRefine((tasks, ctx) => {
    tasks.forEach((task, index) => {
      for (const dependency of task.dependsOn ?? []) {
        if (dependency > index) {
          ctx.addIssue({
            code: 'custom',
            path: [index, 'dependsOn'],
            message: `task ${index + 1} may depend only on tasks before it (1 to ${index})`,
          });
        }
      }
    });
  });

export const MissionFields = z.strictObject({
  objective: z.string().trim().min(1, 'objective must not be empty').max(4_000),
  // Without tasks, a model writes the plan.
  tasks: MissionPlan.optional(),
  // Where the report goes (default: the user's persistent conversation).
  conversationId: Id.optional(),
  // Caps of the whole mission: planning, every task and the report (defaults from the server).
  maxTokens: z.number().int().min(1_000).max(10_000_000).optional(),
  maxCostUsd: z.number().positive().max(1_000).optional(),
});
export type MissionFields = z.input<typeof MissionFields>;

export const MissionTask = z.object({
  id: Id,
  number: z.number().int().min(1),
  title: z.string(),
  brief: z.string(),
  dependsOn: z.array(z.number().int()),
  tools: z.array(z.string()).nullable(),
  skills: z.array(z.string()),
  status: MissionTaskStatus,
  // The task's own run: its steps are at GET /v1/runs/{runId}.
  runId: Id.nullable(),
  // What the task found, as its run answered it.
  result: z.string().nullable(),
  error: ErrorInfo.nullable(),
  usage: Usage,
  costUsd: z.number().nonnegative(),
  startedAt: Timestamp.nullable(),
  finishedAt: Timestamp.nullable(),
});
export type MissionTask = z.infer<typeof MissionTask>;

export const Mission = z.object({
  id: Id,
  objective: z.string(),
  status: MissionStatus,
  // user: through the API; model: through the start_mission tool, during that run; schedule: by
  // a schedule's occurrence.
  createdBy: z.enum(['user', 'model', 'schedule']),
  sourceRunId: Id.nullable(),
  // Where the report is posted.
  conversationId: Id,
  limits: z.object({ maxTokens: z.number().int(), maxCostUsd: z.number() }),
  // Spent so far by planning, the tasks and the report together.
  usage: Usage,
  costUsd: z.number().nonnegative(),
  report: z.string().nullable(),
  reportMessageId: Id.nullable(),
  error: ErrorInfo.nullable(),
  createdAt: Timestamp,
  finishedAt: Timestamp.nullable(),
});
export type Mission = z.infer<typeof Mission>;

// A question one of the mission's tasks asked, waiting for its user's answer: its text is also
// in the mission's conversation.
export const MissionQuestion = z.object({
  id: Id,
  taskId: Id,
  text: z.string(),
  askedAt: Timestamp,
  // Unanswered by then, the task goes on without an answer.
  expiresAt: Timestamp,
});
export type MissionQuestion = z.infer<typeof MissionQuestion>;

export const MissionDetail = Mission.extend({
  tasks: z.array(MissionTask),
  // The question longest waiting (the first of questions), or null.
  question: MissionQuestion.nullable(),
  // Every question waiting for an answer, longest waiting first (tasks in parallel may each ask).
  questions: z.array(MissionQuestion),
});
export type MissionDetail = z.infer<typeof MissionDetail>;

// orchestrator.missions.create: stores the mission and starts it; answers at once.
export const MissionsCreateRequest = MissionFields.extend({
  userId: Id,
  createdBy: z.enum(['user', 'model', 'schedule']).default('user'),
  sourceRunId: Id.optional(),
  // The same key again (per user) answers the mission it made first: a schedule's run starts
  // its mission once, however often its delivery is retried.
  idempotencyKey: z.string().min(1).max(200).optional(),
  // The user's zone, in which its tasks are told the date and time (default: UTC).
  userTimeZone: TimeZone.optional(),
});
export type MissionsCreateRequest = z.input<typeof MissionsCreateRequest>;
export const MissionResponse = z.object({ mission: MissionDetail });
export type MissionResponse = z.infer<typeof MissionResponse>;
export const orchestratorMissionsCreate = defineRpc(
  'orchestrator.missions.create',
  MissionsCreateRequest,
  MissionResponse,
);

const listFields = {
  limit: z.number().int().min(1).max(MISSION_LIST_MAX_LIMIT).default(20),
  status: MissionStatus.optional(),
  // Cursor: only missions created before this instant (the previous page's nextBefore).
  before: Timestamp.optional(),
};

// orchestrator.missions.list: the user's missions, newest first, without their tasks.
export const MissionsListRequest = z.object({ userId: Id, ...listFields });
export type MissionsListRequest = z.input<typeof MissionsListRequest>;
export const MissionsListResponse = z.object({
  missions: z.array(Mission),
  nextBefore: Timestamp.optional(),
});
export const orchestratorMissionsList = defineRpc(
  'orchestrator.missions.list',
  MissionsListRequest,
  MissionsListResponse,
);

// orchestrator.missions.get: one mission with its tasks; another user's is not_found.
export const MissionsGetRequest = z.object({ userId: Id, id: Id });
export const orchestratorMissionsGet = defineRpc(
  'orchestrator.missions.get',
  MissionsGetRequest,
  MissionResponse,
);

// orchestrator.missions.cancel: tasks not started are skipped, running ones stop before their
// next model call, and the report says what was done. A finished mission answers `conflict`.
export const orchestratorMissionsCancel = defineRpc(
  'orchestrator.missions.cancel',
  MissionsGetRequest,
  MissionResponse,
);

// orchestrator.missions.answer: answers one waiting question of the mission (by default the one
// longest waiting), and its task goes on with the answer. Without that question waiting it
// answers `conflict`.
export const MissionAnswerFields = z.strictObject({
  text: z.string().trim().min(1, 'the answer must not be empty').max(MESSAGE_MAX_CHARS),
  questionId: Id.optional(),
});
export const MissionsAnswerRequest = MissionAnswerFields.extend({ userId: Id, id: Id });
export type MissionsAnswerRequest = z.input<typeof MissionsAnswerRequest>;
export const orchestratorMissionsAnswer = defineRpc(
  'orchestrator.missions.answer',
  MissionsAnswerRequest,
  MissionResponse,
);

// HTTP: POST /v1/missions, GET /v1/missions?limit=&status=&before=, GET /v1/missions/{id},
// POST /v1/missions/{id}/cancel, POST /v1/missions/{id}/answer.
export const MissionsListQuery = z.strictObject({
  ...listFields,
  limit: z.coerce.number().int().min(1).max(MISSION_LIST_MAX_LIMIT).optional(),
});
export const MissionIdParams = z.strictObject({ id: Id });

// The durable work of missions, on the MISSIONS stream: write the plan, run one task, write the
// report. Each is redelivered after a crash and safe to run again.
export const MissionWork = z.discriminatedUnion('step', [
  z.object({ step: z.literal('plan'), userId: Id, missionId: Id }),
  z.object({ step: z.literal('task'), userId: Id, missionId: Id, taskId: Id }),
  z.object({ step: z.literal('report'), userId: Id, missionId: Id }),
]);
export type MissionWork = z.infer<typeof MissionWork>;
export const missionWork = defineEvent('missions.work', MissionWork);
export const MISSIONS_STREAM = 'MISSIONS';
