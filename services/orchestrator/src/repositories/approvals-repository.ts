import type { Approval, ApprovalStatus } from '@jarvis/contracts';
import type { Pool, Queryable } from '@jarvis/db';

type ApprovalRow = {
  id: string;
  run_id: string;
  turn_id: string;
  user_id: string;
  conversation_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
  status: ApprovalStatus;
  loop_state: unknown;
  created_at: Date;
  expires_at: Date;
  decided_at: Date | null;
};

export type StoredApproval = Approval & { userId: string; toolCallId: string; loopState: unknown };

function toApproval(row: ApprovalRow): StoredApproval {
  return {
    id: row.id,
    runId: row.run_id,
    turnId: row.turn_id,
    userId: row.user_id,
    conversationId: row.conversation_id,
    toolCallId: row.tool_call_id,
    toolName: row.tool_name,
    arguments: row.arguments,
    status: row.status,
    loopState: row.loop_state,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    decidedAt: row.decided_at?.toISOString() ?? null,
  };
}

// What callers outside the orchestrator see: no loop state, no internal ids.
export function publicApproval(approval: StoredApproval): Approval {
  const { userId: _user, toolCallId: _call, loopState: _state, ...shown } = approval;
  return shown;
}

export type NewApproval = {
  id: string;
  runId: string;
  turnId: string;
  userId: string;
  conversationId: string;
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  loopState: unknown;
  ttlMs: number;
};

// The same paused call (a redelivered turn) keeps its first approval.
export async function insertApproval(
  db: Queryable,
  approval: NewApproval,
): Promise<StoredApproval> {
  const { rows } = await db.query<ApprovalRow>(
    `INSERT INTO orchestrator.approvals
       (id, run_id, turn_id, user_id, conversation_id, tool_call_id, tool_name, arguments, status,
        loop_state, expires_at)
     VALUES ($1, $2, $10, $3, $4, $5, $6, $7, 'pending', $8,
             now() + $9 * interval '1 millisecond')
     ON CONFLICT (run_id, tool_call_id) DO UPDATE SET run_id = excluded.run_id
     RETURNING *`,
    [
      approval.id,
      approval.runId,
      approval.userId,
      approval.conversationId,
      approval.toolCallId,
      approval.toolName,
      approval.arguments,
      JSON.stringify(approval.loopState),
      approval.ttlMs,
      approval.turnId,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error('approval was not stored');
  return toApproval(row);
}

export async function findApproval(
  db: Queryable,
  userId: string,
  id: string,
): Promise<StoredApproval | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    'SELECT * FROM orchestrator.approvals WHERE user_id = $1 AND id = $2',
    [userId, id],
  );
  return rows[0] ? toApproval(rows[0]) : undefined;
}

// The approval the run paused on last: the only one a resume may go on from.
export async function findLatestApproval(
  db: Queryable,
  runId: string,
): Promise<StoredApproval | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT * FROM orchestrator.approvals WHERE run_id = $1
     ORDER BY created_at DESC, id DESC LIMIT 1`,
    [runId],
  );
  return rows[0] ? toApproval(rows[0]) : undefined;
}

// Each approval of a run lets it start once more (its resume): attempts beyond those are failures.
export async function countRunApprovals(db: Queryable, runId: string): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM orchestrator.approvals WHERE run_id = $1',
    [runId],
  );
  return rows[0]?.count ?? 0;
}

export async function listApprovals(
  db: Queryable,
  userId: string,
  status: ApprovalStatus,
  limit: number,
): Promise<StoredApproval[]> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT * FROM orchestrator.approvals WHERE user_id = $1 AND status = $2
     ORDER BY created_at DESC, id DESC LIMIT $3`,
    [userId, status, limit],
  );
  return rows.map(toApproval);
}

// Only a pending approval that has not expired can be decided, and only once.
export async function decideApproval(
  db: Queryable,
  userId: string,
  id: string,
  status: 'approved' | 'denied',
): Promise<StoredApproval | undefined> {
  const { rows } = await db.query<ApprovalRow>(
    `UPDATE orchestrator.approvals SET status = $3, decided_at = now()
     WHERE user_id = $1 AND id = $2 AND status = 'pending' AND expires_at > now()
     RETURNING *`,
    [userId, id, status],
  );
  return rows[0] ? toApproval(rows[0]) : undefined;
}

// Pending approvals past their time become expired; each replica takes its own share.
export async function expireDueApprovals(db: Pool, limit: number): Promise<StoredApproval[]> {
  const { rows } = await db.query<ApprovalRow>(
    `UPDATE orchestrator.approvals SET status = 'expired', decided_at = now()
     WHERE id IN (
       SELECT id FROM orchestrator.approvals
       WHERE status = 'pending' AND expires_at <= now()
       ORDER BY expires_at LIMIT $1
       FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [limit],
  );
  return rows.map(toApproval);
}

// Decided approvals whose run still waits a while later: their resume was lost (a crash between
// the decision and queueing it), so it is queued again.
export async function findStrandedDecisions(
  db: Pool,
  olderThanMs: number,
  limit: number,
): Promise<StoredApproval[]> {
  const { rows } = await db.query<ApprovalRow>(
    `SELECT a.* FROM orchestrator.approvals a
     JOIN orchestrator.runs r ON r.id = a.run_id
     WHERE a.status <> 'pending' AND r.status = 'waiting_approval'
       AND a.decided_at < now() - $1 * interval '1 millisecond'
     ORDER BY a.decided_at LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows.map(toApproval);
}

// Approvals no one has decided yet, of every user: the approvals-waiting gauge reads it at each
// scrape (the partial index approvals_due holds exactly these rows).
export async function countPendingApprovals(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ waiting: number }>(
    `SELECT count(*)::int AS waiting FROM orchestrator.approvals WHERE status = 'pending'`,
  );
  return rows[0]?.waiting ?? 0;
}
