import type { Queryable } from '@jarvis/db';
import { isOpenFact } from './facts-repository';

// Items memory holds, by kind, of every user: what is live (a forgotten message, a fact changed
// or forgotten, a deleted file are not). Episodes are the files under episodes/. Read for the
// memory-items gauge, at most once a minute: each count reads a whole table or index.
export async function countItemsByKind(db: Queryable): Promise<Record<string, number>> {
  const { rows } = await db.query<{ kind: string; items: number }>(
    `SELECT 'message' AS kind, count(*)::int AS items
       FROM memory.messages WHERE forgotten_at IS NULL
     UNION ALL
     SELECT 'fact', count(*)::int FROM memory.facts WHERE ${isOpenFact()}
     UNION ALL
     SELECT 'summary', count(*)::int FROM memory.summaries
     UNION ALL
     SELECT 'document', count(*)::int FROM memory.documents
     UNION ALL
     SELECT CASE WHEN starts_with(path, 'episodes/') THEN 'episode' ELSE 'file' END,
            count(*)::int
       FROM memory.files WHERE deleted_at IS NULL
       GROUP BY 1`,
  );
  const counts: Record<string, number> = { file: 0, episode: 0 };
  for (const row of rows) counts[row.kind] = row.items;
  return counts;
}
