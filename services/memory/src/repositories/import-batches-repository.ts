import type { PoolClient } from '@jarvis/db';

// Records the request an import's batch key was first sent with, and answers that request's hash
// (this one's when the key is new). A concurrent first use of the key is waited for: its hash
// counts once it commits, and not at all if it rolls back.
export async function claimImportBatch(
  db: PoolClient,
  userId: string,
  batchKey: string,
  requestHash: string,
): Promise<string> {
  await db.query(
    `INSERT INTO memory.import_batches (user_id, batch_key, request_hash) VALUES ($1, $2, $3)
     ON CONFLICT (user_id, batch_key) DO NOTHING`,
    [userId, batchKey, requestHash],
  );
  const { rows } = await db.query<{ request_hash: string }>(
    'SELECT request_hash FROM memory.import_batches WHERE user_id = $1 AND batch_key = $2',
    [userId, batchKey],
  );
  return rows[0]?.request_hash ?? requestHash;
}
