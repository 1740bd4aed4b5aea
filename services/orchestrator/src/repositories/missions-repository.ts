import type {
  ErrorInfo,
  Mission,
  MissionStatus,
  MissionTask,
  MissionTaskStatus,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// Missions and their tasks. Every query a user's request reaches is scoped by user_id: another
// user's mission looks exactly like a missing one. The workers address rows by id alone: their
// ids come from the work queue, which only the orchestrator writes.

type MissionRow = {
  id: string;
  user_id: string;
  conversation_id: string;
  objective: string;
  status: MissionStatus;
  created_by: Mission['createdBy'];
  source_run_id: string | null;
  max_tokens: number;
  // numeric: node-postgres hands it over as text.
  max_cost_usd: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: string;
  report: string | null;
  report_message_id: string | null;
  error_code: ErrorInfo['code'] | null;
  error_message: string | null;
  created_at: Date;
  finished_at: Date | null;
  time_zone: string | null;
};

type TaskRow = {
  id: string;
  mission_id: string;
  user_id: string;
  number: number;
  title: string;
  brief: string;
  depends_on: number[];
  tools: string[] | null;
  skills: string[];
  status: MissionTaskStatus;
  run_id: string | null;
  result: string | null;
  error_code: ErrorInfo['code'] | null;
  error_message: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  // From the task's run.
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: string | null;
};

// timeZone: the user's, in which its tasks are told the time (null: UTC).
export type StoredMission = Mission & { userId: string; timeZone: string | null };
export type StoredTask = MissionTask & { missionId: string; userId: string };

function toError(code: ErrorInfo['code'] | null, message: string | null): ErrorInfo | null {
  return code && message !== null ? { code, message } : null;
}

function toMission(row: MissionRow): StoredMission {
  return {
    id: row.id,
    userId: row.user_id,
    objective: row.objective,
    status: row.status,
    createdBy: row.created_by,
    sourceRunId: row.source_run_id,
    conversationId: row.conversation_id,
    limits: { maxTokens: row.max_tokens, maxCostUsd: Number(row.max_cost_usd) },
    usage: { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
    costUsd: Number(row.cost_usd),
    report: row.report,
    reportMessageId: row.report_message_id,
    error: toError(row.error_code, row.error_message),
    createdAt: row.created_at.toISOString(),
    finishedAt: row.finished_at?.toISOString() ?? null,
    timeZone: row.time_zone,
  };
}

function toTask(row: TaskRow): StoredTask {
  return {
    id: row.id,
    missionId: row.mission_id,
    userId: row.user_id,
    number: row.number,
    title: row.title,
    brief: row.brief,
    dependsOn: row.depends_on,
    tools: row.tools,
    skills: row.skills,
    status: row.status,
    runId: row.run_id,
    result: row.result,
    error: toError(row.error_code, row.error_message),
    usage: { inputTokens: row.input_tokens ?? 0, outputTokens: row.output_tokens ?? 0 },
    costUsd: Number(row.cost_usd ?? 0),
    startedAt: row.started_at?.toISOString() ?? null,
    finishedAt: row.finished_at?.toISOString() ?? null,
  };
}

export type NewMission = {
  id: string;
  userId: string;
  conversationId: string;
  objective: string;
  status: 'planning' | 'running';
  createdBy: Mission['createdBy'];
  sourceRunId: string | undefined;
  maxTokens: number;
  maxCostUsd: number;
  idempotencyKey: string | undefined;
  timeZone: string | undefined;
  // The span the mission was started in, which its tasks' traces link to.
  trace: { traceId: string; spanId: string } | undefined;
};

// False when a mission of the same user and idempotency key is already there (a retry, or a
// request racing this one): nothing is inserted then.
export async function insertMission(db: Queryable, mission: NewMission): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO orchestrator.missions
       (id, user_id, conversation_id, objective, status, created_by, source_run_id, max_tokens,
        max_cost_usd, idempotency_key, trace_id, span_id, time_zone)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT DO NOTHING`,
    [
      mission.id,
      mission.userId,
      mission.conversationId,
      mission.objective,
      mission.status,
      mission.createdBy,
      mission.sourceRunId ?? null,
      mission.maxTokens,
      mission.maxCostUsd,
      mission.idempotencyKey ?? null,
      mission.trace?.traceId ?? null,
      mission.trace?.spanId ?? null,
      mission.timeZone ?? null,
    ],
  );
  return rowCount === 1;
}

// The span a mission was started in, when it was kept; by id alone, as the workers address it.
export async function findMissionTrace(
  db: Queryable,
  id: string,
): Promise<{ traceId: string | null; spanId: string | null }> {
  const { rows } = await db.query<{ trace_id: string | null; span_id: string | null }>(
    'SELECT trace_id, span_id FROM orchestrator.missions WHERE id = $1',
    [id],
  );
  return { traceId: rows[0]?.trace_id ?? null, spanId: rows[0]?.span_id ?? null };
}

export type NewTask = {
  id: string;
  title: string;
  brief: string;
  dependsOn: number[];
  tools: string[] | undefined;
  skills: string[];
};

export async function insertTasks(
  db: Queryable,
  mission: { id: string; userId: string },
  tasks: NewTask[],
): Promise<void> {
  for (const [index, task] of tasks.entries()) {
    await db.query(
      `INSERT INTO orchestrator.mission_tasks
         (id, mission_id, user_id, number, title, brief, depends_on, tools, skills, status)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending')`,
      [
        task.id,
        mission.id,
        mission.userId,
        index + 1,
        task.title,
        task.brief,
        task.dependsOn,
        task.tools ?? null,
        task.skills,
      ],
    );
  }
}

export async function findMission(
  db: Queryable,
  userId: string,
  id: string,
): Promise<StoredMission | undefined> {
  const { rows } = await db.query<MissionRow>(
    'SELECT * FROM orchestrator.missions WHERE id = $1 AND user_id = $2',
    [id, userId],
  );
  return rows[0] ? toMission(rows[0]) : undefined;
}

export async function findMissionByKey(
  db: Queryable,
  userId: string,
  idempotencyKey: string,
): Promise<StoredMission | undefined> {
  const { rows } = await db.query<MissionRow>(
    'SELECT * FROM orchestrator.missions WHERE user_id = $1 AND idempotency_key = $2',
    [userId, idempotencyKey],
  );
  return rows[0] ? toMission(rows[0]) : undefined;
}

// The mission, its row locked until the transaction ends: whoever moves its tasks on holds it,
// so two tasks finishing at once never both start the next one or both write the report.
export async function lockMission(
  db: Queryable,
  userId: string,
  id: string,
): Promise<StoredMission | undefined> {
  const { rows } = await db.query<MissionRow>(
    'SELECT * FROM orchestrator.missions WHERE id = $1 AND user_id = $2 FOR UPDATE',
    [id, userId],
  );
  return rows[0] ? toMission(rows[0]) : undefined;
}

export async function listMissions(
  db: Queryable,
  filter: { userId: string; status: MissionStatus | undefined; before: Date | undefined },
  limit: number,
): Promise<StoredMission[]> {
  const { rows } = await db.query<MissionRow>(
    `SELECT * FROM orchestrator.missions
     WHERE user_id = $1
       AND ($2::text IS NULL OR status = $2)
       AND ($3::timestamptz IS NULL OR created_at < $3)
     ORDER BY created_at DESC, id DESC
     LIMIT $4`,
    [filter.userId, filter.status ?? null, filter.before ?? null, limit],
  );
  return rows.map(toMission);
}

// Missions a worker should be moving on, whoever created them (a cancelled one still owes its
// report): looked at once on start.
export async function listUnfinishedMissions(db: Queryable): Promise<StoredMission[]> {
  const { rows } = await db.query<MissionRow>(
    `SELECT * FROM orchestrator.missions
     WHERE status IN ('planning', 'running', 'reporting')
        OR (status = 'cancelled' AND report_message_id IS NULL)
     ORDER BY created_at`,
  );
  return rows.map(toMission);
}

export async function listTasks(
  db: Queryable,
  userId: string,
  missionId: string,
): Promise<StoredTask[]> {
  const { rows } = await db.query<TaskRow>(
    `SELECT t.*, r.input_tokens, r.output_tokens, r.cost_usd
     FROM orchestrator.mission_tasks t
     LEFT JOIN orchestrator.runs r ON r.id = t.run_id
     WHERE t.mission_id = $1 AND t.user_id = $2
     ORDER BY t.number`,
    [missionId, userId],
  );
  return rows.map(toTask);
}

export async function setMissionStatus(
  db: Queryable,
  id: string,
  status: MissionStatus,
  error?: ErrorInfo,
): Promise<void> {
  const isFinal = status === 'completed' || status === 'failed' || status === 'cancelled';
  await db.query(
    `UPDATE orchestrator.missions
     SET status = $2, error_code = coalesce($3, error_code),
         error_message = coalesce($4, error_message),
         finished_at = CASE WHEN $5 THEN now() ELSE finished_at END
     WHERE id = $1`,
    [id, status, error?.code ?? null, error?.message ?? null, isFinal],
  );
}

export async function recordReport(
  db: Queryable,
  id: string,
  report: { content: string; messageId: string },
): Promise<void> {
  await db.query(
    'UPDATE orchestrator.missions SET report = $2, report_message_id = $3 WHERE id = $1',
    [id, report.content, report.messageId],
  );
}

// Adds one model call's cost and returns the totals, so a cap is checked against everything
// every task has spent so far.
export async function chargeMission(
  db: Queryable,
  id: string,
  spent: { inputTokens: number; outputTokens: number; costUsd: number },
): Promise<void> {
  await db.query(
    `UPDATE orchestrator.missions
     SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
         cost_usd = cost_usd + $4
     WHERE id = $1`,
    [id, spent.inputTokens, spent.outputTokens, spent.costUsd],
  );
}

// A queued task becomes running, leased to its worker. A running task whose lease has passed
// (its worker died) is taken over. Otherwise: when the task is leased, until when (another
// worker has it), or nothing (it is not to run: ended, skipped, not yet queued).
export async function claimTask(
  db: Queryable,
  userId: string,
  taskId: string,
  leaseMs: number,
): Promise<{ isClaimed: true } | { isClaimed: false; leasedUntil: Date | null }> {
  const { rowCount } = await db.query(
    `UPDATE orchestrator.mission_tasks
     SET status = 'running', started_at = coalesce(started_at, now()),
         lease_until = now() + make_interval(secs => $3::double precision / 1000)
     WHERE id = $1 AND user_id = $2
       AND (status = 'queued' OR (status = 'running' AND lease_until < now()))`,
    [taskId, userId, leaseMs],
  );
  if (rowCount === 1) return { isClaimed: true };
  const { rows } = await db.query<{ status: MissionTaskStatus; lease_until: Date | null }>(
    'SELECT status, lease_until FROM orchestrator.mission_tasks WHERE id = $1 AND user_id = $2',
    [taskId, userId],
  );
  const row = rows[0];
  return { isClaimed: false, leasedUntil: row?.status === 'running' ? row.lease_until : null };
}

export async function renewTaskLease(db: Queryable, taskId: string, leaseMs: number) {
  await db.query(
    `UPDATE orchestrator.mission_tasks
     SET lease_until = now() + make_interval(secs => $2::double precision / 1000)
     WHERE id = $1 AND status = 'running'`,
    [taskId, leaseMs],
  );
}

export async function setTaskRun(db: Queryable, taskId: string, runId: string): Promise<void> {
  await db.query('UPDATE orchestrator.mission_tasks SET run_id = $2 WHERE id = $1', [
    taskId,
    runId,
  ]);
}

export async function setTaskStatus(
  db: Queryable,
  taskId: string,
  status: MissionTaskStatus,
  outcome: { result?: string; error?: ErrorInfo } = {},
): Promise<void> {
  const isFinal = status === 'completed' || status === 'failed' || status === 'skipped';
  await db.query(
    `UPDATE orchestrator.mission_tasks
     SET status = $2, result = coalesce($3, result), error_code = $4, error_message = $5,
         finished_at = CASE WHEN $6 THEN now() ELSE finished_at END
     WHERE id = $1`,
    [
      taskId,
      status,
      outcome.result ?? null,
      outcome.error?.code ?? null,
      outcome.error?.message ?? null,
      isFinal,
    ],
  );
}
