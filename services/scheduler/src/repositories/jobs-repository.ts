import type { Job } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';

type JobRow = {
  id: string;
  kind: Job['kind'];
  title: string;
  next_run_at: Date | null;
  created_at: Date;
};

export async function listJobs(db: Pool, userId: string): Promise<Job[]> {
  const { rows } = await db.query<JobRow>(
    `SELECT id, kind, title, next_run_at, created_at FROM scheduler.jobs
     WHERE user_id = $1 ORDER BY created_at, id`,
    [userId],
  );
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    title: row.title,
    nextRunAt: row.next_run_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  }));
}
