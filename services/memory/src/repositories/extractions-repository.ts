import type { Queryable } from '@jarvis/db';

export type ExtractionStatus = 'done' | 'skipped' | 'failed';

export type ExtractionRecord = {
  runId: string;
  userId: string;
  status: ExtractionStatus;
  // Stored as JSON: what was applied or ignored, for whoever later asks what a turn added.
  operations: unknown[];
  reason: string | null;
};

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
    `INSERT INTO memory.extractions (run_id, user_id, status, operations, reason)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (run_id) DO NOTHING`,
    [record.runId, record.userId, record.status, JSON.stringify(record.operations), record.reason],
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
