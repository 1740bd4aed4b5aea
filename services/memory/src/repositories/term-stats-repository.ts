import type { Queryable } from '@jarvis/db';

// Adds items to the user's term statistics: `termCounts` says in how many of the new items each
// term occurs.
export async function addTermCounts(
  db: Queryable,
  userId: string,
  termCounts: Map<string, number>,
  items: number,
): Promise<void> {
  if (items === 0) return;
  const terms = [...termCounts.keys()].sort();
  await db.query(
    `INSERT INTO memory.term_stats (user_id, term, items)
     SELECT $1, term, items FROM unnest($2::text[], $3::int[]) AS t(term, items)
     ON CONFLICT (user_id, term) DO UPDATE SET items = memory.term_stats.items + excluded.items`,
    [userId, terms, terms.map((term) => termCounts.get(term) ?? 0)],
  );
  await db.query(
    `INSERT INTO memory.item_counts (user_id, items) VALUES ($1, $2)
     ON CONFLICT (user_id) DO UPDATE SET items = memory.item_counts.items + excluded.items`,
    [userId, items],
  );
}

export async function loadTermCounts(
  db: Queryable,
  userId: string,
  terms: string[],
): Promise<{ items: number; counts: Map<string, number> }> {
  // One statement, not two side by side: on a small machine each statement costs a round trip's
  // CPU on both ends, whatever it reads. The row without a term is the user's item count.
  const { rows } = await db.query<{ term: string | null; items: string }>(
    `SELECT NULL AS term, items FROM memory.item_counts WHERE user_id = $1
     UNION ALL
     SELECT term, items FROM memory.term_stats WHERE user_id = $1 AND term = ANY($2::text[])`,
    [userId, terms],
  );
  const counts = new Map<string, number>();
  let items = 0;
  for (const row of rows) {
    if (row.term === null) items = Number(row.items);
    else counts.set(row.term, Number(row.items));
  }
  return { items, counts };
}

// The reverse of addTermCounts, for items that change or go away, so rarity weights do not drift.
export async function removeTermCounts(
  db: Queryable,
  userId: string,
  termCounts: Map<string, number>,
  items: number,
): Promise<void> {
  if (items === 0) return;
  const terms = [...termCounts.keys()].sort();
  await db.query(
    `UPDATE memory.term_stats s SET items = greatest(s.items - t.items, 0)
     FROM unnest($2::text[], $3::int[]) AS t(term, items)
     WHERE s.user_id = $1 AND s.term = t.term`,
    [userId, terms, terms.map((term) => termCounts.get(term) ?? 0)],
  );
  await db.query(
    'UPDATE memory.item_counts SET items = greatest(items - $2, 0) WHERE user_id = $1',
    [userId, items],
  );
}
