import type {
  ErrorInfo,
  RunDetail,
  RunKind,
  RunStatus,
  RunStep,
  RunStepKind,
  RunStepStatus,
  RunSummary,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// Reading runs and their steps for their user. Every query is scoped by user_id: another user's
// run must look exactly like a missing one.

export type RunListFilter = {
  userId: string;
  before: Date | undefined;
  conversationId: string | undefined;
  status: RunStatus | undefined;
};

type RunSummaryRow = {
  id: string;
  kind: RunKind;
  turn_id: string;
  conversation_id: string;
  mission_id: string | null;
  status: RunStatus;
  attempts: number;
  provider: string | null;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  // numeric: node-postgres hands it over as text, so it keeps every digit.
  cost_usd: string;
  steps: number;
  error_code: ErrorInfo['code'] | null;
  error_message: string | null;
  trace_id: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
};

type RunDetailRow = RunSummaryRow & {
  user_message_id: string | null;
  reply_message_id: string | null;
  context: Record<string, unknown>;
};

type StepRow = {
  id: string;
  attempt: number;
  seq: number;
  kind: RunStepKind;
  name: string;
  status: RunStepStatus;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: string;
  started_at: Date;
  duration_ms: number;
};

// The reply is a message memory holds: a run names it (reply_message_id) and never copies it.
// Steps are counted over every attempt, as the detail lists them.
const SUMMARY_COLUMNS = `id, kind, turn_id, conversation_id, mission_id, status, attempts, provider, model,
  input_tokens, output_tokens, cost_usd, error_code, error_message, trace_id, created_at,
  started_at, finished_at,
  (SELECT count(*)::int FROM orchestrator.run_steps s WHERE s.run_id = runs.id) AS steps`;
const DETAIL_COLUMNS = `${SUMMARY_COLUMNS}, user_message_id, reply_message_id, context`;
const STEP_COLUMNS = `id, attempt, seq, kind, name, status, input, output, error, input_tokens,
  output_tokens, cost_usd, started_at, duration_ms`;

// Everything a summary and a detail share. The detail's `steps` are the steps themselves, where a
// summary has only their count.
function toRunFields(row: RunSummaryRow): Omit<RunSummary, 'steps'> {
  return {
    id: row.id,
    kind: row.kind,
    turnId: row.turn_id,
    conversationId: row.conversation_id,
    missionId: row.mission_id,
    status: row.status,
    attempts: row.attempts,
    provider: row.provider,
    model: row.model,
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    costUsd: Number(row.cost_usd),
    error:
      row.error_code && row.error_message !== null
        ? { code: row.error_code, message: row.error_message }
        : null,
    traceId: row.trace_id,
    createdAt: row.created_at.toISOString(),
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

function toRunSummary(row: RunSummaryRow): RunSummary {
  return { ...toRunFields(row), steps: row.steps };
}

function toStep(row: StepRow): RunStep {
  return {
    id: row.id,
    attempt: row.attempt,
    seq: row.seq,
    kind: row.kind,
    name: row.name,
    status: row.status,
    input: row.input,
    output: row.output,
    error: row.error,
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    costUsd: Number(row.cost_usd),
    startedAt: row.started_at.toISOString(),
    durationMs: row.duration_ms,
  };
}

// Newest first; runs created in the same instant in a fixed order.
export async function listUserRuns(
  db: Queryable,
  filter: RunListFilter,
  limit: number,
): Promise<RunSummary[]> {
  const { rows } = await db.query<RunSummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM orchestrator.runs
     WHERE user_id = $1
       AND ($2::timestamptz IS NULL OR created_at < $2)
       AND ($3::uuid IS NULL OR conversation_id = $3)
       AND ($4::text IS NULL OR status = $4)
     ORDER BY created_at DESC, id DESC
     LIMIT $5`,
    [
      filter.userId,
      filter.before ?? null,
      filter.conversationId ?? null,
      filter.status ?? null,
      limit,
    ],
  );
  return rows.map(toRunSummary);
}

// The run without its steps (listRunSteps reads those).
export async function findUserRun(
  db: Queryable,
  userId: string,
  id: string,
): Promise<Omit<RunDetail, 'steps'> | undefined> {
  const { rows } = await db.query<RunDetailRow>(
    `SELECT ${DETAIL_COLUMNS} FROM orchestrator.runs WHERE user_id = $1 AND id = $2`,
    [userId, id],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    ...toRunFields(row),
    userMessageId: row.user_message_id,
    replyMessageId: row.reply_message_id,
    context: row.context,
  };
}

// In the order they happened: an attempt's steps, then the next attempt's.
export async function listRunSteps(
  db: Queryable,
  userId: string,
  runId: string,
): Promise<RunStep[]> {
  const { rows } = await db.query<StepRow>(
    `SELECT ${STEP_COLUMNS} FROM orchestrator.run_steps
     WHERE user_id = $1 AND run_id = $2
     ORDER BY attempt, seq`,
    [userId, runId],
  );
  return rows.map(toStep);
}
