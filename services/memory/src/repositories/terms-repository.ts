import type { Queryable } from '@jarvis/db';

// Each text's terms, in order, as Postgres' full-text search reads it (memory.terms, migration
// 015): the sparse embedder and the term statistics see exactly the lexemes that full-text
// search matches. One statement for any number of texts.
export async function readTerms(db: Queryable, texts: string[]): Promise<string[][]> {
  if (texts.length === 0) return [];
  const { rows } = await db.query<{ terms: string[] }>(
    `SELECT memory.terms(body) AS terms FROM unnest($1::text[]) WITH ORDINALITY AS t(body, at)
     ORDER BY at`,
    [texts],
  );
  return rows.map((row) => row.terms);
}
