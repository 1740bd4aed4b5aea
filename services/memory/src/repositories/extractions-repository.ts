import type { Queryable } from '@jarvis/db';

export type ExtractionStatus = 'done' | 'skipped' | 'failed';

export type ExtractionRecord = {
  // The turn's run, or for the "remember" command the user's message: the row's id.
  runId: string;
  userId: string;
  // Unknown while the command path stores its fact; the turn's extraction fills it in.
  turnId: string | null;
  status: ExtractionStatus;
  // Stored as JSON: what was applied or ignored, for whoever later asks what a turn added.
  operations: unknown[];
  reason: string | null;
};

export type StoredExtraction = {
  id: string;
  turnId: string | null;
  operations: unknown[];
  createdAt: Date;
  undoneAt: Date | null;
};

type ExtractionRow = {
  run_id: string;
  turn_id: string | null;
  operations: unknown[];
  created_at: Date;
  undone_at: Date | null;
};

function toExtraction(row: ExtractionRow): StoredExtraction {
  return {
    id: row.run_id,
    turnId: row.turn_id,
    operations: row.operations,
    createdAt: row.created_at,
    undoneAt: row.undone_at,
  };
}

export async function hasExtraction(db: Queryable, runId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM memory.extractions WHERE run_id = $1', [
    runId,
  ]);
  return rowCount === 1;
}

// False when the run already has its outcome: a redelivered or concurrent job then does nothing.
// Inside a transaction the row also claims the run, so a second worker waits here and loses.
export async function insertExtraction(db: Queryable, record: ExtractionRecord): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO memory.extractions (run_id, user_id, turn_id, status, operations, reason)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (run_id) DO NOTHING`,
    [
      record.runId,
      record.userId,
      record.turnId,
      record.status,
      JSON.stringify(record.operations),
      record.reason,
    ],
  );
  return rowCount === 1;
}

export async function setExtractionOperations(
  db: Queryable,
  runId: string,
  operations: unknown[],
): Promise<void> {
  await db.query('UPDATE memory.extractions SET operations = $2 WHERE run_id = $1', [
    runId,
    JSON.stringify(operations),
  ]);
}

// The command path's row (keyed by the user's message) learns its turn when the turn is extracted.
// Found again by a redelivered job of the same turn, whose first try may have failed after this.
export async function setExtractionTurn(
  db: Queryable,
  userId: string,
  runId: string,
  turnId: string,
): Promise<StoredExtraction | undefined> {
  const { rows } = await db.query<ExtractionRow>(
    `UPDATE memory.extractions SET turn_id = $3
     WHERE run_id = $2 AND user_id = $1 AND (turn_id IS NULL OR turn_id = $3)
     RETURNING run_id, turn_id, operations, created_at, undone_at`,
    [userId, runId, turnId],
  );
  return rows[0] && toExtraction(rows[0]);
}

// Newest first, only those that changed something; `before` pages by creation time.
export async function listExtractions(
  db: Queryable,
  userId: string,
  limit: number,
  before: Date | undefined,
): Promise<StoredExtraction[]> {
  const { rows } = await db.query<ExtractionRow>(
    `SELECT run_id, turn_id, operations, created_at, undone_at FROM memory.extractions
     WHERE user_id = $1 AND status = 'done' AND operations <> '[]'::jsonb
       AND ($3::timestamptz IS NULL OR created_at < $3)
     ORDER BY created_at DESC, run_id DESC LIMIT $2`,
    [userId, limit, before ?? null],
  );
  return rows.map(toExtraction);
}

// Holds the row until the transaction ends, so two undos of one extraction take turns.
export async function lockExtraction(
  db: Queryable,
  userId: string,
  id: string,
): Promise<StoredExtraction | undefined> {
  const { rows } = await db.query<ExtractionRow>(
    `SELECT run_id, turn_id, operations, created_at, undone_at FROM memory.extractions
     WHERE user_id = $1 AND run_id = $2 FOR UPDATE`,
    [userId, id],
  );
  return rows[0] && toExtraction(rows[0]);
}

export async function markExtractionUndone(db: Queryable, id: string): Promise<Date> {
  const { rows } = await db.query<{ undone_at: Date }>(
    'UPDATE memory.extractions SET undone_at = now() WHERE run_id = $1 RETURNING undone_at',
    [id],
  );
  const row = rows[0];
  if (!row) throw new Error('locked extraction vanished before it was undone');
  return row.undone_at;
}
