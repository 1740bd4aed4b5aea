import { BusError } from '@jarvis/bus';
import type { Pool } from '@jarvis/db';

export type NewSubmission = {
  turnId: string;
  userId: string;
  request: unknown;
  idempotencyKey: string | undefined;
  requestHash: string;
};

// Records a turn's submission before anything of it is stored, and answers whether it is new; a
// submission seen before (the same turn id: a retry, or the same Idempotency-Key) must be the
// same request.
export async function recordSubmission(db: Pool, submission: NewSubmission): Promise<boolean> {
  const inserted = await db.query(
    `INSERT INTO orchestrator.turn_submissions
       (turn_id, user_id, request, idempotency_key, request_hash)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (turn_id) DO NOTHING`,
    [
      submission.turnId,
      submission.userId,
      JSON.stringify(submission.request),
      submission.idempotencyKey ?? null,
      submission.requestHash,
    ],
  );
  if (inserted.rowCount === 1) return true;
  const { rows } = await db.query<{ user_id: string; request_hash: string }>(
    'SELECT user_id, request_hash FROM orchestrator.turn_submissions WHERE turn_id = $1',
    [submission.turnId],
  );
  const existing = rows[0];
  // Deleted since (its submit failed cleanly): nothing of it is stored, so this one starts anew.
  if (!existing) return recordSubmission(db, submission);
  // The turn id belongs to another user's turn: never reveal or reuse it.
  if (existing.user_id !== submission.userId)
    throw new BusError('conflict', 'turn id already in use');
  if (existing.request_hash !== submission.requestHash) {
    throw new BusError(
      'idempotency_key_reused',
      'this Idempotency-Key was used before with another message; nothing was stored',
    );
  }
  return false;
}

// The turn is queued: the sweep has nothing left to do for it, and the message's text is dropped
// from here (memory keeps it, and forgets it when asked).
export async function markSubmissionQueued(db: Pool, turnId: string): Promise<void> {
  await db.query(
    `UPDATE orchestrator.turn_submissions SET queued_at = now(), request = NULL
     WHERE turn_id = $1 AND queued_at IS NULL`,
    [turnId],
  );
}

// A submit that failed before its message could be stored leaves nothing to finish.
export async function deleteSubmission(db: Pool, turnId: string): Promise<void> {
  await db.query(
    'DELETE FROM orchestrator.turn_submissions WHERE turn_id = $1 AND queued_at IS NULL',
    [turnId],
  );
}

export type StaleSubmission = { turnId: string; request: unknown };

// Submissions still unqueued `staleMs` after they were recorded, oldest first: their submit died.
export async function listStaleSubmissions(
  db: Pool,
  staleMs: number,
  limit: number,
): Promise<StaleSubmission[]> {
  const { rows } = await db.query<{ turn_id: string; request: unknown }>(
    `SELECT turn_id, request FROM orchestrator.turn_submissions
     WHERE queued_at IS NULL AND request IS NOT NULL
       AND created_at < now() - make_interval(secs => $1::double precision / 1000)
     ORDER BY created_at LIMIT $2`,
    [staleMs, limit],
  );
  return rows.map((row) => ({ turnId: row.turn_id, request: row.request }));
}
