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

// A query's terms (memory.terms: in order, repeats kept) and their statistics: in how many of
// the user's items each occurs, and how many items the user has.
export async function loadQueryTerms(
  db: Queryable,
  userId: string,
  query: string,
): Promise<{ terms: string[]; items: number; counts: Map<string, number> }> {
  // One statement, not three side by side: on a small machine each statement costs a round
  // trip's CPU on both ends, whatever it reads. The row without a term has the user's item count
  // and the query's terms. Materialized, the terms are made once, as the statement runs; inline,
  // the planner makes them for each use while it plans, which took twice as long.
  const { rows } = await db.query<{ term: string | null; items: string | null; terms: string[] }>(
    `WITH q AS MATERIALIZED (SELECT memory.terms($2) AS terms)
     SELECT NULL AS term, (SELECT items FROM memory.item_counts WHERE user_id = $1) AS items,
       q.terms
     FROM q
     UNION ALL
     SELECT s.term, s.items, NULL FROM memory.term_stats s, q
     WHERE s.user_id = $1 AND s.term = ANY(q.terms)`,
    [userId, query],
  );
  const counts = new Map<string, number>();
  let items = 0;
  let terms: string[] = [];
  for (const row of rows) {
    if (row.term === null) {
      items = Number(row.items ?? 0);
      terms = row.terms;
    } else counts.set(row.term, Number(row.items));
  }
  return { terms, items, counts };
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
