import {
  type MissedPolicy,
  ScheduleAction,
  type ScheduleKind,
  type ScheduleStatus,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import { z } from 'zod';
import type { Rule } from '../rules';

// Schedules. Every query a user's request reaches is scoped by user_id: another user's schedule
// looks exactly like a missing one, and a system job (user_id NULL) like none at all. The engine
// addresses rows by id alone, under the row locks of its claim.

type ScheduleRow = {
  id: string;
  user_id: string | null;
  kind: ScheduleKind;
  name: string | null;
  action: unknown;
  at: Date | null;
  cron: string | null;
  every_minutes: number | null;
  time_zone: string;
  conversation_id: string | null;
  missed_policy: MissedPolicy;
  missed_max_runs: number;
  grace_minutes: number;
  start_at: Date | null;
  end_at: Date | null;
  max_runs: number | null;
  run_count: number;
  next_run_at: Date | null;
  snooze_at: Date | null;
  status: ScheduleStatus;
  created_by: 'user' | 'model' | 'system';
  source_run_id: string | null;
  created_at: Date;
  updated_at: Date;
};

// The scheduler's own jobs. Internal: the contracts' ScheduleAction, what users may ask for,
// does not have it.
const SystemAction = z.strictObject({
  type: z.literal('system'),
  job: z.enum(['weekly_rollup']),
});
type SystemAction = z.infer<typeof SystemAction>;

export type ScheduleRecord = {
  id: string;
  userId: string;
  kind: ScheduleKind;
  name: string | null;
  action: ScheduleAction;
  rule: Rule;
  timeZone: string;
  conversationId: string | null;
  missedPolicy: MissedPolicy;
  missedMaxRuns: number;
  graceMinutes: number;
  startAt: Date | null;
  endAt: Date | null;
  maxRuns: number | null;
  runCount: number;
  // The rule's next occurrence not yet handled (null: none left).
  nextRunAt: Date | null;
  // A snoozed reminder's extra occurrence.
  snoozeAt: Date | null;
  status: ScheduleStatus;
  createdBy: 'user' | 'model';
  sourceRunId: string | null;
  createdAt: Date;
  updatedAt: Date;
};

// A system job's schedule: no user, no conversation.
export type SystemScheduleRecord = Omit<ScheduleRecord, 'userId' | 'action' | 'createdBy'> & {
  userId: null;
  action: SystemAction;
  createdBy: 'system';
};

// What the engine claims and delivers: a user's schedule or a system job (userId tells).
export type StoredSchedule = ScheduleRecord | SystemScheduleRecord;

const COLUMNS = `id, user_id, kind, name, action, at, cron, every_minutes, time_zone, conversation_id,
  missed_policy, missed_max_runs, grace_minutes, start_at, end_at, max_runs, run_count,
  next_run_at, snooze_at, status, created_by, source_run_id, created_at, updated_at`;

function toRule(row: ScheduleRow): Rule {
  if (row.kind === 'once' && row.at) return { kind: 'once', at: row.at };
  if (row.kind === 'cron' && row.cron) {
    return { kind: 'cron', cron: row.cron, timeZone: row.time_zone };
  }
  if (row.kind === 'interval' && row.every_minutes) {
    // Elapsed time from the start, or from the creation when there is none.
    return {
      kind: 'interval',
      everyMinutes: row.every_minutes,
      anchor: row.start_at ?? row.created_at,
    };
  }
  // The table's checks make each kind carry its own field.
  throw new Error(`schedule ${row.id} of kind ${row.kind} lacks its rule`);
}

function toStored(row: ScheduleRow): StoredSchedule {
  const common = {
    id: row.id,
    kind: row.kind,
    name: row.name,
    rule: toRule(row),
    timeZone: row.time_zone,
    conversationId: row.conversation_id,
    missedPolicy: row.missed_policy,
    missedMaxRuns: row.missed_max_runs,
    graceMinutes: row.grace_minutes,
    startAt: row.start_at,
    endAt: row.end_at,
    maxRuns: row.max_runs,
    runCount: row.run_count,
    nextRunAt: row.next_run_at,
    snoozeAt: row.snooze_at,
    status: row.status,
    sourceRunId: row.source_run_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.user_id === null) {
    return { ...common, userId: null, action: SystemAction.parse(row.action), createdBy: 'system' };
  }
  return {
    ...common,
    userId: row.user_id,
    action: ScheduleAction.parse(row.action),
    // The table's checks keep 'system' to rows without a user.
    createdBy: row.created_by === 'model' ? 'model' : 'user',
  };
}

// A row a user's request reached: scoped by user_id, so never a system job's.
function toRecord(row: ScheduleRow): ScheduleRecord {
  const stored = toStored(row);
  if (stored.userId === null) throw new Error(`system schedule ${row.id} in a user's query`);
  return stored;
}

function ruleColumns(rule: Rule) {
  return {
    at: rule.kind === 'once' ? rule.at : null,
    cron: rule.kind === 'cron' ? rule.cron : null,
    everyMinutes: rule.kind === 'interval' ? rule.everyMinutes : null,
  };
}

// A system job's schedule has a fixed id: inserted at every start, it is made once and then kept
// as it is (its cursor above all).
export async function insertSchedule(db: Queryable, schedule: StoredSchedule): Promise<void> {
  const rule = ruleColumns(schedule.rule);
  await db.query(
    `INSERT INTO scheduler.schedules (${COLUMNS})
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
             $19, $20, $21, $22, $23, $24)
     ON CONFLICT (id) DO NOTHING`,
    [
      schedule.id,
      schedule.userId,
      schedule.kind,
      schedule.name,
      JSON.stringify(schedule.action),
      rule.at,
      rule.cron,
      rule.everyMinutes,
      schedule.timeZone,
      schedule.conversationId,
      schedule.missedPolicy,
      schedule.missedMaxRuns,
      schedule.graceMinutes,
      schedule.startAt,
      schedule.endAt,
      schedule.maxRuns,
      schedule.runCount,
      schedule.nextRunAt,
      schedule.snoozeAt,
      schedule.status,
      schedule.createdBy,
      schedule.sourceRunId,
      schedule.createdAt,
      schedule.updatedAt,
    ],
  );
}

// Everything a user may change, written back whole; created_at, run_count and the owner stay.
export async function saveSchedule(db: Queryable, schedule: ScheduleRecord): Promise<void> {
  const rule = ruleColumns(schedule.rule);
  await db.query(
    `UPDATE scheduler.schedules
        SET name = $3, action = $4, at = $5, cron = $6, every_minutes = $7, time_zone = $8,
            missed_policy = $9, missed_max_runs = $10, grace_minutes = $11, end_at = $12,
            max_runs = $13, next_run_at = $14, snooze_at = $15, status = $16, updated_at = $17,
            conversation_id = $18
      WHERE user_id = $1 AND id = $2`,
    [
      schedule.userId,
      schedule.id,
      schedule.name,
      JSON.stringify(schedule.action),
      rule.at,
      rule.cron,
      rule.everyMinutes,
      schedule.timeZone,
      schedule.missedPolicy,
      schedule.missedMaxRuns,
      schedule.graceMinutes,
      schedule.endAt,
      schedule.maxRuns,
      schedule.nextRunAt,
      schedule.snoozeAt,
      schedule.status,
      schedule.updatedAt,
      schedule.conversationId,
    ],
  );
}

export async function findSchedule(
  db: Queryable,
  userId: string,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<ScheduleRecord | undefined> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM scheduler.schedules WHERE user_id = $1 AND id = $2
     ${options.forUpdate ? 'FOR UPDATE' : ''}`,
    [userId, id],
  );
  return rows[0] && toRecord(rows[0]);
}

// The schedules of runs the engine took over, whoever they belong to.
export async function findSchedulesByIds(
  db: Queryable,
  ids: string[],
): Promise<Map<string, StoredSchedule>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM scheduler.schedules WHERE id = ANY($1)`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, toStored(row)]));
}

// A user's schedules can pile up (every one-shot reminder stays, ended): a listing past this many
// would outgrow a bus reply. The live ones, at most SCHEDULER_MAX_SCHEDULES_PER_USER, come first.
const LIST_MAX = 1_000;

// Soonest next run first, then the ended ones, newest first.
export async function listSchedules(
  db: Queryable,
  userId: string,
  status: ScheduleStatus | undefined,
): Promise<ScheduleRecord[]> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM scheduler.schedules
      WHERE user_id = $1 AND ($2::text IS NULL OR status = $2)
      ORDER BY status = 'ended', LEAST(next_run_at, snooze_at) NULLS LAST, created_at DESC, id
      LIMIT ${LIST_MAX}`,
    [userId, status ?? null],
  );
  return rows.map(toRecord);
}

export async function deleteSchedule(db: Queryable, userId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'DELETE FROM scheduler.schedules WHERE user_id = $1 AND id = $2',
    [userId, id],
  );
  return (rowCount ?? 0) > 0;
}

// A user's schedules that have not ended: the per-user limit counts these.
export async function countLiveSchedules(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM scheduler.schedules
      WHERE user_id = $1 AND status <> 'ended'`,
    [userId],
  );
  return rows[0]?.count ?? 0;
}

// A user's agent work (prompt, mission) that has not ended: the daily cap adds up over these.
export async function listLiveAgentSchedules(
  db: Queryable,
  userId: string,
): Promise<ScheduleRecord[]> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM scheduler.schedules
      WHERE user_id = $1 AND status <> 'ended' AND action->>'type' IN ('prompt', 'mission')`,
    [userId],
  );
  return rows.map(toRecord);
}

// Serialises one user's checks of the per-user limits: two creates at once must not both see
// room for one more.
export async function lockUserSchedules(db: Queryable, userId: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`scheduler:user:${userId}`]);
}

// The engine's wake-up time: the earliest due time of any active schedule, or the earliest end
// of a lease on a run still running (a crashed process' claim, or a postponed delivery). Both
// are read from partial indexes.
export async function findNextWake(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ due: Date | null; lease: Date | null }>(
    `SELECT (SELECT min(LEAST(next_run_at, snooze_at)) FROM scheduler.schedules
              WHERE status = 'active') AS due,
            (SELECT min(lease_until) FROM scheduler.runs WHERE status = 'running') AS lease`,
  );
  const times = [rows[0]?.due, rows[0]?.lease].filter((time) => time instanceof Date);
  if (times.length === 0) return undefined;
  return new Date(Math.min(...times.map((time) => time.getTime())));
}

// Active schedules due at `now`, locked for this transaction. SKIP LOCKED: a schedule another
// replica is claiming is left to it, so no occurrence is claimed twice and replicas do not queue
// behind each other.
export async function lockDueSchedules(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<StoredSchedule[]> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT ${COLUMNS} FROM scheduler.schedules
      WHERE status = 'active' AND LEAST(next_run_at, snooze_at) <= $1
      ORDER BY LEAST(next_run_at, snooze_at)
      LIMIT $2
      FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows.map(toStored);
}

// Due agent work (prompt, mission), read without locking: whether each one's previous run still
// goes is asked of the orchestrator before the claim's transaction begins.
export async function findDueAgentSchedules(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<Array<{ id: string }>> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM scheduler.schedules
      WHERE status = 'active' AND LEAST(next_run_at, snooze_at) <= $1
        AND action->>'type' IN ('prompt', 'mission')
      ORDER BY LEAST(next_run_at, snooze_at)
      LIMIT $2`,
    [now, limit],
  );
  return rows;
}

export type ScheduleAdvance = {
  nextRunAt: Date | null;
  snoozeAt: Date | null;
  runCount: number;
  status: ScheduleStatus;
};

// A claim's outcome for each of its schedules, in one statement: the rule's cursor moved past
// what was claimed.
export async function advanceSchedules(
  db: Queryable,
  advances: Array<ScheduleAdvance & { id: string }>,
): Promise<void> {
  if (advances.length === 0) return;
  await db.query(
    `UPDATE scheduler.schedules s
        SET next_run_at = a.next_run_at, snooze_at = a.snooze_at, run_count = a.run_count,
            status = a.status, updated_at = now()
       FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::int[], $5::text[])
            AS a(id, next_run_at, snooze_at, run_count, status)
      WHERE s.id = a.id`,
    [
      advances.map((advance) => advance.id),
      advances.map((advance) => advance.nextRunAt),
      advances.map((advance) => advance.snoozeAt),
      advances.map((advance) => advance.runCount),
      advances.map((advance) => advance.status),
    ],
  );
}

// Serialises the daily cap of agent work per user across replicas, for the claim's transaction.
// Callers take them in one sorted order, so two claims never wait on each other in a circle.
export async function lockUsersAgentWork(db: Queryable, userIds: string[]): Promise<void> {
  for (const userId of [...userIds].sort()) {
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`scheduler:agent:${userId}`]);
  }
}
