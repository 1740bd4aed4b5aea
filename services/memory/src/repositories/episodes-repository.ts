import type { Queryable } from '@jarvis/db';

// The episode files of some days: paths from `fromPath` (the first day's folder,
// `episodes/2026-11-23/`) up to `toPath` (the folder of the day after the last), compared byte
// by byte as migration 016's index holds them.
export type EpisodeDays = { fromPath: string; toPath: string };

// An episode file sits straight in its day's folder; roll-ups (episodes/weeks/…) and deeper
// files are not episodes. starts_with lets the planner use migration 016's partial index.
const IS_EPISODE_IN_DAYS = `f.deleted_at IS NULL AND starts_with(f.path, 'episodes/')
  AND f.path COLLATE "C" >= $2 AND f.path COLLATE "C" < $3
  AND f.path ~ '^episodes/[0-9]{4}-[0-9]{2}-[0-9]{2}/[^/]+$'`;

// The first `limit` of the user's episode paths in those days, in path (so time) order, and
// how many there are in all.
export async function listEpisodePaths(
  db: Queryable,
  userId: string,
  days: EpisodeDays,
  limit: number,
): Promise<{ paths: string[]; total: number }> {
  const { rows } = await db.query<{ path: string; total: string }>(
    `SELECT f.path, count(*) OVER () AS total FROM memory.files f
     WHERE f.user_id = $1 AND ${IS_EPISODE_IN_DAYS}
     ORDER BY f.path COLLATE "C"
     LIMIT $4`,
    [userId, days.fromPath, days.toPath, limit],
  );
  return { paths: rows.map((row) => row.path), total: Number(rows[0]?.total ?? 0) };
}

export async function countEpisodes(
  db: Queryable,
  userId: string,
  days: EpisodeDays,
): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    `SELECT count(*) FROM memory.files f WHERE f.user_id = $1 AND ${IS_EPISODE_IN_DAYS}`,
    [userId, days.fromPath, days.toPath],
  );
  return Number(rows[0]?.count ?? 0);
}

// The start of each of these live files, in path order.
export async function readFileStarts(
  db: Queryable,
  userId: string,
  paths: string[],
  chars: number,
): Promise<{ path: string; text: string }[]> {
  const { rows } = await db.query<{ path: string; text: string }>(
    `SELECT path, left(content, $3) AS text FROM memory.files
     WHERE user_id = $1 AND path = ANY($2::text[]) AND deleted_at IS NULL
     ORDER BY path COLLATE "C"`,
    [userId, paths, chars],
  );
  return rows;
}

// Across users, for the scheduler's weekly job: who has episodes in those days and no live file
// at `rollupPath`, in id order after `after`.
export async function listUsersWithoutRollup(
  db: Queryable,
  query: { days: EpisodeDays; rollupPath: string; after: string | undefined; limit: number },
): Promise<string[]> {
  const { rows } = await db.query<{ user_id: string }>(
    `SELECT u.user_id FROM (
       SELECT DISTINCT f.user_id FROM memory.files f
       WHERE ${IS_EPISODE_IN_DAYS} AND ($4::uuid IS NULL OR f.user_id > $4)
     ) u
     WHERE NOT EXISTS (
       SELECT 1 FROM memory.files r
       WHERE r.user_id = u.user_id AND r.path = $1 AND r.deleted_at IS NULL)
     ORDER BY u.user_id
     LIMIT $5`,
    [query.rollupPath, query.days.fromPath, query.days.toPath, query.after ?? null, query.limit],
  );
  return rows.map((row) => row.user_id);
}
