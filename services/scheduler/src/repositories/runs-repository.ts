import type { ScheduleRunStatus } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// Runs: one row per occurrence of a schedule, unique on (schedule, scheduled-for instant).

type RunRow = {
  id: string;
  schedule_id: string;
  user_id: string | null;
  scheduled_for: Date;
  status: ScheduleRunStatus;
  started_at: Date | null;
  finished_at: Date | null;
  message_id: string | null;
  run_id: string | null;
  mission_id: string | null;
  reason: string | null;
  attempts: number;
};

export type RunRecord = {
  id: string;
  scheduleId: string;
  // Null: a system job's run.
  userId: string | null;
  scheduledFor: Date;
  status: ScheduleRunStatus;
  startedAt: Date | null;
  finishedAt: Date | null;
  messageId: string | null;
  runId: string | null;
  missionId: string | null;
  reason: string | null;
  attempts: number;
};

const COLUMNS = `id, schedule_id, user_id, scheduled_for, status, started_at, finished_at,
  message_id, run_id, mission_id, reason, attempts`;

function toRecord(row: RunRow): RunRecord {
  return {
    id: row.id,
    scheduleId: row.schedule_id,
    userId: row.user_id,
    scheduledFor: row.scheduled_for,
    status: row.status,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    messageId: row.message_id,
    runId: row.run_id,
    missionId: row.mission_id,
    reason: row.reason,
    attempts: row.attempts,
  };
}

export type NewRun = {
  id: string;
  scheduleId: string;
  userId: string | null;
  scheduledFor: Date;
  // running: its action is delivered next, under a lease until leaseUntil. The others are
  // written finished.
  status: 'running' | 'skipped' | 'missed';
  reason: string | null;
};

// Writes a claim's runs. An occurrence already written (by a claim that another replica made
// first) is left as it is and not returned: only what this call inserted is this caller's.
export async function insertRuns(
  db: Queryable,
  runs: NewRun[],
  now: Date,
  leaseUntil: Date,
): Promise<RunRecord[]> {
  if (runs.length === 0) return [];
  const { rows } = await db.query<RunRow>(
    `INSERT INTO scheduler.runs (id, schedule_id, user_id, scheduled_for, status, reason,
                                 started_at, finished_at, attempts, lease_until)
     SELECT id, schedule_id, user_id, scheduled_for, status, reason,
            CASE WHEN status = 'running' THEN $7::timestamptz END,
            CASE WHEN status = 'running' THEN NULL ELSE $7::timestamptz END,
            CASE WHEN status = 'running' THEN 1 ELSE 0 END,
            CASE WHEN status = 'running' THEN $8::timestamptz END
       FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[], $5::text[], $6::text[])
            AS r(id, schedule_id, user_id, scheduled_for, status, reason)
     ON CONFLICT (schedule_id, scheduled_for) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      runs.map((run) => run.id),
      runs.map((run) => run.scheduleId),
      runs.map((run) => run.userId),
      runs.map((run) => run.scheduledFor),
      runs.map((run) => run.status),
      runs.map((run) => run.reason),
      now,
      leaseUntil,
    ],
  );
  return rows.map(toRecord);
}

// Runs of agent work (prompt, mission) each user's schedules started since `since`: the daily
// cap at fire time.
export async function countAgentRunsSince(
  db: Queryable,
  userIds: string[],
  since: Date,
): Promise<Map<string, number>> {
  const { rows } = await db.query<{ user_id: string; count: number }>(
    `SELECT r.user_id, count(*)::int AS count
       FROM scheduler.runs r JOIN scheduler.schedules s ON s.id = r.schedule_id
      WHERE r.user_id = ANY($1) AND r.started_at > $2
        AND r.status IN ('running', 'fired', 'failed')
        AND s.action->>'type' IN ('prompt', 'mission')
      GROUP BY r.user_id`,
    [userIds, since],
  );
  return new Map(rows.map((row) => [row.user_id, row.count]));
}

// The latest run of each schedule that was started (running or fired): whether its turn or
// mission is still going decides whether the next occurrence may start.
export async function findLatestStartedRuns(
  db: Queryable,
  scheduleIds: string[],
): Promise<RunRecord[]> {
  if (scheduleIds.length === 0) return [];
  const { rows } = await db.query<RunRow>(
    `SELECT DISTINCT ON (schedule_id) ${COLUMNS} FROM scheduler.runs
      WHERE schedule_id = ANY($1) AND status IN ('running', 'fired')
      ORDER BY schedule_id, scheduled_for DESC`,
    [scheduleIds],
  );
  return rows.map(toRecord);
}

// Runs whose lease ran out while still running: their process died between claim and delivery
// (or in it). Taken over here with a new lease; SKIP LOCKED leaves those another replica is
// taking over right now to it.
export async function takeOverExpiredRuns(
  db: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<RunRecord[]> {
  const { rows } = await db.query<RunRow>(
    `UPDATE scheduler.runs SET lease_until = $2, attempts = attempts + 1
      WHERE id IN (SELECT id FROM scheduler.runs
                    WHERE status = 'running' AND lease_until <= $1
                    ORDER BY lease_until LIMIT $3
                    FOR UPDATE SKIP LOCKED)
      RETURNING ${COLUMNS}`,
    [now, leaseUntil, limit],
  );
  return rows.map(toRecord);
}

// Keeps the leases of runs this process claimed and has not finished: each (id, attempts) still
// running under that attempt gets at least leaseUntil (a later postponement stays). Returns the
// ids it still holds; one taken over by another replica (its attempts moved on) or finished is
// not among them. The attempt is checked in the UPDATE itself, which Postgres re-reads under the
// row's lock, so a take-over that commits first is never overwritten.
export async function extendLeases(
  db: Queryable,
  runs: Array<{ id: string; attempts: number }>,
  leaseUntil: Date,
): Promise<Set<string>> {
  if (runs.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `UPDATE scheduler.runs r SET lease_until = GREATEST(r.lease_until, $3)
       FROM unnest($1::uuid[], $2::int[]) AS held(id, attempts)
      WHERE r.id = held.id AND r.attempts = held.attempts AND r.status = 'running'
      RETURNING r.id`,
    [runs.map((run) => run.id), runs.map((run) => run.attempts), leaseUntil],
  );
  return new Set(rows.map((row) => row.id));
}

export type RunOutcome = {
  status: 'fired' | 'failed' | 'skipped';
  messageId?: string | undefined;
  runId?: string | undefined;
  missionId?: string | undefined;
  reason?: string | undefined;
};

export type RunFinish = { id: string; outcome: RunOutcome; finishedAt: Date };

// Finishes runs in one statement. Only a run still running is finished: a second delivery of the
// same run (a lease taken over while the first was slow) finds it done and changes nothing, and
// is not among the runs returned.
export async function finishRuns(db: Queryable, finishes: RunFinish[]): Promise<RunRecord[]> {
  if (finishes.length === 0) return [];
  const { rows } = await db.query<RunRow>(
    `UPDATE scheduler.runs
        SET status = f.new_status, message_id = f.new_message_id, run_id = f.new_run_id,
            mission_id = f.new_mission_id, reason = f.new_reason,
            finished_at = f.new_finished_at, lease_until = NULL
       FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::uuid[], $6::text[],
                   $7::timestamptz[])
            AS f(run, new_status, new_message_id, new_run_id, new_mission_id, new_reason,
                 new_finished_at)
      WHERE id = f.run AND status = 'running'
      RETURNING ${COLUMNS}`,
    [
      finishes.map((finish) => finish.id),
      finishes.map((finish) => finish.outcome.status),
      finishes.map((finish) => finish.outcome.messageId ?? null),
      finishes.map((finish) => finish.outcome.runId ?? null),
      finishes.map((finish) => finish.outcome.missionId ?? null),
      finishes.map((finish) => finish.outcome.reason ?? null),
      finishes.map((finish) => finish.finishedAt),
    ],
  );
  return rows.map(toRecord);
}

// A delivery that could not reach its service is tried again when the lease ends, by whichever
// replica takes it over first.
export async function postponeRun(db: Queryable, id: string, leaseUntil: Date): Promise<void> {
  await db.query(
    `UPDATE scheduler.runs SET lease_until = $2 WHERE id = $1 AND status = 'running'`,
    [id, leaseUntil],
  );
}

// A schedule's history, newest occurrence first; `before` pages on.
export async function listRuns(
  db: Queryable,
  userId: string,
  scheduleId: string,
  options: { limit: number; before: Date | undefined },
): Promise<RunRecord[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${COLUMNS} FROM scheduler.runs
      WHERE user_id = $1 AND schedule_id = $2 AND ($3::timestamptz IS NULL OR scheduled_for < $3)
      ORDER BY scheduled_for DESC
      LIMIT $4`,
    [userId, scheduleId, options.before ?? null, options.limit],
  );
  return rows.map(toRecord);
}

export async function hasFiredRun(db: Queryable, scheduleId: string): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM scheduler.runs WHERE schedule_id = $1 AND status = 'fired' LIMIT 1`,
    [scheduleId],
  );
  return rows.length > 0;
}
