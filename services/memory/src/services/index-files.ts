import type { Queryable } from '@jarvis/db';
import { countTermsByItem, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { deleteDenseEmbeddings } from '../repositories/dense-embeddings-repository';
import { upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import { deleteFileEmbeddings } from '../repositories/files-repository';
import { addTermCounts, removeTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';

// What search sees of a file: its path and its first 20,000 characters (the embedding keeps at
// most 1,000 features anyway). The path's separators are spaces, as its full-text column reads it
// (migration 003): Postgres' parser would otherwise take "notes/lisbon.md" for one file-path term.
// Migration 015 counts a file's terms from the same text.
const INDEXED_CHARS = 20_000;

type IndexedFile = { id: string; path: string; content: string; updatedAt: string };

function indexedText(path: string, content: string): string {
  return `${path.replace(/[/._-]/g, ' ')}\n${content.slice(0, INDEXED_CHARS)}`;
}

// Makes the file's current version searchable; `previous` is the content it replaces, whose
// terms no longer count.
export async function indexFile(
  db: Queryable,
  userId: string,
  file: IndexedFile,
  previous?: { path: string; content: string },
): Promise<void> {
  const [terms = [], previousTerms] = await readTerms(db, [
    indexedText(file.path, file.content),
    ...(previous ? [indexedText(previous.path, previous.content)] : []),
  ]);
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, [
    {
      kind: 'file',
      itemId: file.id,
      userId,
      conversationId: null,
      itemCreatedAt: new Date(file.updatedAt),
      vector: embedDocument({ terms }),
    },
  ]);
  if (previous) await deleteDenseEmbeddings(db, 'file', file.id);
  if (previousTerms) await removeTermCounts(db, userId, countTermsByItem([previousTerms]), 1);
  await addTermCounts(db, userId, countTermsByItem([terms]), 1);
}

export async function unindexFile(db: Queryable, userId: string, file: IndexedFile): Promise<void> {
  await deleteFileEmbeddings(db, file.id);
  const terms = await readTerms(db, [indexedText(file.path, file.content)]);
  await removeTermCounts(db, userId, countTermsByItem(terms), 1);
}
