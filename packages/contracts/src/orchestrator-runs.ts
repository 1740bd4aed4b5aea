import { z } from 'zod';
import { Id, Timestamp, Usage } from './common';
import { defineRpc } from './define';
import { ErrorInfo } from './errors';

// Runs: what the orchestrator did for each turn, read back by their user. A run is written only
// by the orchestrator as the turn goes; these subjects never change one.

export const RUN_LIST_MAX_LIMIT = 100;
export const RUN_LIST_DEFAULT_LIMIT = 20;

// waiting_approval: paused on a risky tool call until its user approves, denies, or it expires.
export const RunStatus = z.enum(['queued', 'running', 'waiting_approval', 'completed', 'failed']);
export type RunStatus = z.infer<typeof RunStatus>;

// turn: answers a message. mission_task: one task of a mission, with the task's brief as its
// prompt; its reply is the task's result, not a message.
export const RunKind = z.enum(['turn', 'mission_task']);
export type RunKind = z.infer<typeof RunKind>;

export const RunStepKind = z.enum(['recall', 'model', 'tool', 'guardrail', 'error']);
export type RunStepKind = z.infer<typeof RunStepKind>;

export const RunStepStatus = z.enum(['ok', 'error']);
export type RunStepStatus = z.infer<typeof RunStepStatus>;

const Count = z.number().int().nonnegative();
const CostUsd = z.number().nonnegative();
const JsonObject = z.record(z.string(), z.unknown());
const RunListLimit = z.number().int().min(1).max(RUN_LIST_MAX_LIMIT);

// What a listing shows of a run.
export const RunSummary = z.object({
  id: Id,
  kind: RunKind,
  // The turn a turn's run answers; a task's run has its task's id here.
  turnId: Id,
  conversationId: Id,
  missionId: Id.nullable(),
  status: RunStatus,
  // Deliveries of the turn that started work on it; more than one means it was redelivered.
  attempts: Count,
  // Of the model that answered; null until the run completes.
  provider: z.string().nullable(),
  model: z.string().nullable(),
  usage: Usage,
  costUsd: CostUsd,
  // The step count the orchestrator stored with the run's totals; a detail lists the steps.
  steps: Count,
  error: ErrorInfo.nullable(),
  traceId: z.string().nullable(),
  createdAt: Timestamp,
  startedAt: Timestamp.nullable(),
  finishedAt: Timestamp.nullable(),
});
export type RunSummary = z.infer<typeof RunSummary>;

// One thing a run did: recall, a model call, a tool call, or the guardrail or error that ended
// it. Input and output are summaries (tool arguments, counts, capped text), never the prompt.
export const RunStep = z.object({
  id: Id,
  attempt: Count,
  seq: Count,
  kind: RunStepKind,
  // The model's or tool's name; the guardrail that tripped.
  name: z.string(),
  status: RunStepStatus,
  input: JsonObject,
  output: JsonObject,
  error: z.string().nullable(),
  usage: Usage,
  costUsd: CostUsd,
  startedAt: Timestamp,
  durationMs: Count,
});
export type RunStep = z.infer<typeof RunStep>;

export const RunDetail = RunSummary.extend({
  // The message a turn answers (null for a mission's task).
  userMessageId: Id.nullable(),
  replyMessageId: Id.nullable(),
  // What the turn's context was made of (token budget, how many items of each kind recall gave).
  context: JsonObject,
  // In the order they happened: by attempt, then by seq.
  steps: z.array(RunStep),
});
export type RunDetail = z.infer<typeof RunDetail>;

// The fields each subject takes besides the user, shared with the HTTP schemas below so the
// gateway and the orchestrator validate exactly the same thing.
const listFields = {
  limit: RunListLimit.default(RUN_LIST_DEFAULT_LIMIT),
  // Cursor: only runs created before this instant; pass the previous page's nextBefore.
  before: Timestamp.optional(),
  conversationId: Id.optional(),
  status: RunStatus.optional(),
};
const idFields = { id: Id };

// orchestrator.runs.list: the user's runs, newest first. nextBefore is set only when more follow.
export const RunsListRequest = z.object({ userId: Id, ...listFields });
export type RunsListRequest = z.input<typeof RunsListRequest>;
export const RunsListResponse = z.object({
  runs: z.array(RunSummary),
  nextBefore: Timestamp.optional(),
});
export type RunsListResponse = z.infer<typeof RunsListResponse>;
export const orchestratorRunsList = defineRpc(
  'orchestrator.runs.list',
  RunsListRequest,
  RunsListResponse,
);

// orchestrator.runs.get: one run with its steps. Another user's run answers not_found, exactly
// like a missing one.
export const RunsGetRequest = z.object({ userId: Id, ...idFields });
export type RunsGetRequest = z.input<typeof RunsGetRequest>;
export const RunsGetResponse = z.object({ run: RunDetail });
export type RunsGetResponse = z.infer<typeof RunsGetResponse>;
export const orchestratorRunsGet = defineRpc(
  'orchestrator.runs.get',
  RunsGetRequest,
  RunsGetResponse,
);

// HTTP under /v1/runs. The user comes from the API key, so none of these take one; query strings
// arrive as text and are coerced.

// GET /?limit=&before=&conversationId=&status=
export const RunsListQuery = z.strictObject({
  ...listFields,
  limit: z.coerce.number().pipe(RunListLimit).optional(),
});
// GET /:id
export const RunIdParams = z.strictObject(idFields);
// GET /:id takes no query: a userId or a typo is refused rather than silently ignored.
export const RunGetQuery = z.strictObject({});
