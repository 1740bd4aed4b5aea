import type { Queryable } from '@jarvis/db';
import { countTermsByText, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import { deleteDenseEmbeddings } from '../repositories/dense-embeddings-repository';
import { upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import { deleteFileEmbeddings } from '../repositories/files-repository';
import { addTermCounts, removeTermCounts } from '../repositories/term-stats-repository';

// What search sees of a file: its path and its first 20,000 characters (the embedding keeps at
// most 1,000 features anyway).
const INDEXED_CHARS = 20_000;

type IndexedFile = { id: string; path: string; content: string; updatedAt: string };

function indexedText(path: string, content: string): string {
  return `${path}\n${content.slice(0, INDEXED_CHARS)}`;
}

// Makes the file's current version searchable; `previous` is the content it replaces, whose
// terms no longer count.
export async function indexFile(
  db: Queryable,
  userId: string,
  file: IndexedFile,
  previous?: { path: string; content: string },
): Promise<void> {
  const text = indexedText(file.path, file.content);
  await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, [
    {
      kind: 'file',
      itemId: file.id,
      userId,
      conversationId: null,
      itemCreatedAt: new Date(file.updatedAt),
      vector: embedDocument({ text }),
    },
  ]);
  if (previous) await deleteDenseEmbeddings(db, 'file', file.id);
  if (previous)
    await removeTermCounts(
      db,
      userId,
      countTermsByText([indexedText(previous.path, previous.content)]),
      1,
    );
  await addTermCounts(db, userId, countTermsByText([text]), 1);
}

export async function unindexFile(db: Queryable, userId: string, file: IndexedFile): Promise<void> {
  await deleteFileEmbeddings(db, file.id);
  await removeTermCounts(db, userId, countTermsByText([indexedText(file.path, file.content)]), 1);
}
