import { randomUUID } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import type { ErrorInfo, Usage } from '@jarvis/contracts';
import type { Pool, Queryable } from '@jarvis/db';

type RunStatus = 'queued' | 'running' | 'waiting_approval' | 'completed' | 'failed';

export type Run = {
  id: string;
  turnId: string;
  userId: string;
  conversationId: string;
  userMessageId: string;
  status: RunStatus;
  attempts: number;
  // The reply is a message memory keeps (memory.messages.get reads it back).
  replyMessageId: string | null;
  usage: Usage;
  error: ErrorInfo | null;
  // The user's zone as the turn was submitted with it; undefined when the user has set none (the
  // turn runs in UTC then, and the schedule tools say so).
  timeZone: string | undefined;
  // The schedule whose occurrence submitted the turn; null for one the user typed.
  scheduleId: string | null;
};

type RunRow = {
  id: string;
  turn_id: string;
  user_id: string;
  conversation_id: string;
  user_message_id: string;
  status: RunStatus;
  attempts: number;
  reply_message_id: string | null;
  input_tokens: number;
  output_tokens: number;
  error_code: ErrorInfo['code'] | null;
  error_message: string | null;
  time_zone: string | null;
  schedule_id: string | null;
};

function toRun(row: RunRow): Run {
  return {
    id: row.id,
    turnId: row.turn_id,
    userId: row.user_id,
    conversationId: row.conversation_id,
    userMessageId: row.user_message_id,
    status: row.status,
    attempts: row.attempts,
    replyMessageId: row.reply_message_id,
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    error:
      row.error_code && row.error_message
        ? { code: row.error_code, message: row.error_message }
        : null,
    timeZone: row.time_zone ?? undefined,
    scheduleId: row.schedule_id,
  };
}

export type NewRun = {
  id: string;
  turnId: string;
  userId: string;
  conversationId: string;
  userMessageId: string;
  // When memory stored the user message: a submission recorded before it may still store an
  // earlier message.
  userMessageAt: string;
  // The user message's place in the order messages were stored: the conversation's turns run
  // in this order.
  userMessageSeq: number;
  traceId: string | undefined;
  timeZone: string | undefined;
  // Submitted by this schedule's occurrence (a prompt action).
  scheduleId?: string;
};

// Creates the run of a turn, or returns the run that turn already has.
export async function insertRun(db: Pool, run: NewRun): Promise<Run> {
  const inserted = await db.query<RunRow>(
    `INSERT INTO orchestrator.runs
       (id, turn_id, user_id, conversation_id, user_message_id, status, trace_id, time_zone,
        user_message_at, user_message_seq, schedule_id)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10)
     ON CONFLICT (turn_id) DO NOTHING
     RETURNING *`,
    [
      run.id,
      run.turnId,
      run.userId,
      run.conversationId,
      run.userMessageId,
      run.traceId ?? null,
      run.timeZone ?? null,
      run.userMessageAt,
      run.userMessageSeq,
      run.scheduleId ?? null,
    ],
  );
  const row = inserted.rows[0];
  if (row) return toRun(row);
  const existing = await findRunByTurn(db, run.userId, run.turnId);
  // The turn id belongs to another user's run: never reveal or reuse it.
  if (!existing) throw new BusError('conflict', 'turn id already in use');
  return existing;
}

export async function findRunByTurn(
  db: Pool,
  userId: string,
  turnId: string,
): Promise<Run | undefined> {
  const { rows } = await db.query<RunRow>(
    "SELECT * FROM orchestrator.runs WHERE turn_id = $1 AND user_id = $2 AND kind = 'turn'",
    [turnId, userId],
  );
  return rows[0] ? toRun(rows[0]) : undefined;
}

// A turn's run, and whether the turn must wait for an earlier one: a conversation's messages
// are answered in the order they were stored, so a turn waits while a message stored before its
// own is unanswered, or may be about to be stored (a submission of its user not queued yet,
// recorded before that message).
export async function findTurnToRun(
  db: Pool,
  userId: string,
  turnId: string,
): Promise<{ run: Run; isBehindEarlierTurn: boolean } | undefined> {
  const { rows } = await db.query<RunRow & { is_behind: boolean }>(
    `SELECT r.*, (
       EXISTS (
         SELECT 1 FROM orchestrator.runs earlier
         WHERE earlier.conversation_id = r.conversation_id AND earlier.kind = 'turn'
           AND earlier.status IN ('queued', 'running')
           AND earlier.user_message_seq < r.user_message_seq)
       OR EXISTS (
         SELECT 1 FROM orchestrator.turn_submissions submission
         WHERE submission.user_id = r.user_id AND submission.queued_at IS NULL
           AND submission.created_at < r.user_message_at AND submission.turn_id <> r.turn_id)
     ) AS is_behind
     FROM orchestrator.runs r WHERE r.turn_id = $1 AND r.user_id = $2 AND r.kind = 'turn'`,
    [turnId, userId],
  );
  const row = rows[0];
  return row ? { run: toRun(row), isBehindEarlierTurn: row.is_behind } : undefined;
}

// Counts an attempt and returns its number: a first delivery, a redelivery after a crash, or
// a paused run going on after its approval was decided.
export async function markRunStarted(db: Pool, runId: string): Promise<number> {
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE orchestrator.runs
     SET status = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now())
     WHERE id = $1 AND status IN ('queued', 'running', 'waiting_approval')
     RETURNING attempts`,
    [runId],
  );
  const attempts = rows[0]?.attempts;
  if (attempts === undefined) throw new Error(`run ${runId} cannot start: it has finished`);
  return attempts;
}

export type RunCompletion = {
  // null for a mission task's run: its reply is the task's result, not a message.
  replyMessageId: string | null;
  provider: string;
  model: string;
  usage: Usage;
};

export async function markRunCompleted(
  db: Queryable,
  runId: string,
  completion: RunCompletion,
): Promise<void> {
  await db.query(
    `UPDATE orchestrator.runs
     SET status = 'completed', reply_message_id = $2, provider = $3, model = $4,
         input_tokens = $5, output_tokens = $6, finished_at = now()
     WHERE id = $1`,
    [
      runId,
      completion.replyMessageId,
      completion.provider,
      completion.model,
      completion.usage.inputTokens,
      completion.usage.outputTokens,
    ],
  );
}

export async function markRunFailed(db: Queryable, runId: string, error: ErrorInfo): Promise<void> {
  await db.query(
    `UPDATE orchestrator.runs
     SET status = 'failed', error_code = $2, error_message = $3, finished_at = now()
     WHERE id = $1`,
    [runId, error.code, error.message],
  );
}

// Paused on a risky tool call: the reply asks the user to decide.
export async function markRunWaiting(
  db: Queryable,
  runId: string,
  completion: RunCompletion,
): Promise<void> {
  await db.query(
    `UPDATE orchestrator.runs
     SET status = 'waiting_approval', reply_message_id = $2, provider = $3, model = $4,
         input_tokens = $5, output_tokens = $6
     WHERE id = $1`,
    [
      runId,
      completion.replyMessageId,
      completion.provider,
      completion.model,
      completion.usage.inputTokens,
      completion.usage.outputTokens,
    ],
  );
}

export async function findRunById(
  db: Pool,
  userId: string,
  runId: string,
): Promise<Run | undefined> {
  const { rows } = await db.query<RunRow>(
    "SELECT * FROM orchestrator.runs WHERE id = $1 AND user_id = $2 AND kind = 'turn'",
    [runId, userId],
  );
  return rows[0] ? toRun(rows[0]) : undefined;
}

export type TaskRun = { id: string; status: RunStatus };

// The run of a mission's task: one per task (the task's id is its turn_id), so a redelivered
// task finds the run its crashed attempt started and counts another attempt on it.
export async function ensureTaskRun(
  db: Pool,
  task: { id: string; userId: string; conversationId: string; missionId: string },
  traceId: string | undefined,
): Promise<TaskRun> {
  await db.query(
    `INSERT INTO orchestrator.runs
       (id, turn_id, user_id, conversation_id, status, trace_id, kind, mission_id)
     VALUES ($1, $2, $3, $4, 'queued', $5, 'mission_task', $6)
     ON CONFLICT (turn_id) DO NOTHING`,
    [randomUUID(), task.id, task.userId, task.conversationId, traceId ?? null, task.missionId],
  );
  const { rows } = await db.query<{ id: string; status: RunStatus }>(
    `SELECT id, status FROM orchestrator.runs
     WHERE turn_id = $1 AND user_id = $2 AND kind = 'mission_task'`,
    [task.id, task.userId],
  );
  const row = rows[0];
  if (!row) throw new Error(`task ${task.id} has no run`);
  return { id: row.id, status: row.status };
}
