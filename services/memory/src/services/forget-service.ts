import {
  type ForgetMatch,
  type MemoryForgetApplyRequest,
  type MemoryForgetApplyResponse,
  type MemoryForgetPreviewRequest,
  type MemoryForgetPreviewResponse,
  SEARCH_MAX_LIMIT,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { countTermsByItem } from '@jarvis/embeddings';
import type { z } from 'zod';
import { lockFact } from '../repositories/facts-repository';
import { lockLiveFileById } from '../repositories/files-repository';
import { dropQueuedMessages } from '../repositories/index-queue-repository';
import {
  deleteMessageEmbeddings,
  markMessagesForgotten,
} from '../repositories/messages-repository';
import { removeTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';
import { invalidateFact, isOpen } from './facts-service';
import { deleteLockedFile } from './files-service';
import { searchMemory } from './search-service';

type PreviewRequest = z.output<typeof MemoryForgetPreviewRequest>;
type ApplyRequest = z.output<typeof MemoryForgetApplyRequest>;

// What forgetting `query` would take: the valid facts, messages and memory files (episodes and
// notes, which recall brings back too) memory search finds for it, best first. Search also ranks items that merely sit next to a match or share words with the
// best matches; only items that say one of the query's words are offered for forgetting.
export async function previewForget(
  pool: Pool,
  request: PreviewRequest,
): Promise<MemoryForgetPreviewResponse> {
  const { results } = await searchMemory(pool, {
    userId: request.userId,
    query: request.query,
    limit: SEARCH_MAX_LIMIT,
    kinds: ['fact', 'message', 'file'],
  });
  const [askedTerms = [], ...resultTerms] = await readTerms(pool, [
    request.query,
    ...results.map((result) => result.text),
  ]);
  const asked = new Set(askedTerms);
  const matches = results.flatMap((result, index): ForgetMatch[] =>
    (result.kind === 'fact' || result.kind === 'message' || result.kind === 'file') &&
    (resultTerms[index] ?? []).some((term) => asked.has(term))
      ? [{ kind: result.kind, id: result.id, text: result.text, createdAt: result.createdAt }]
      : [],
  );
  return { matches: matches.slice(0, request.limit) };
}

// All or nothing, in one transaction. A fact is closed like any forget (kept with its history);
// a message is marked and its embeddings go; a file is deleted like any file. Ids that are not
// the user's, and items forgotten before, count for nothing.
export async function applyForget(
  pool: Pool,
  request: ApplyRequest,
): Promise<MemoryForgetApplyResponse> {
  const idsOf = (kind: 'fact' | 'message' | 'file') => [
    ...new Set(request.items.filter((item) => item.kind === kind).map((item) => item.id)),
  ];
  // Facts are locked in id order, so two overlapping requests cannot deadlock.
  const factIds = idsOf('fact').sort();
  const messageIds = idsOf('message');
  const fileIds = idsOf('file').sort();
  return withTransaction(pool, async (db) => {
    let forgotten = 0;
    for (const id of factIds) {
      const fact = await lockFact(db, request.userId, id);
      if (!fact || !isOpen(fact)) continue;
      await invalidateFact(db, request.userId, id, null);
      forgotten += 1;
    }
    for (const id of fileIds) {
      const file = await lockLiveFileById(db, request.userId, id);
      if (!file) continue;
      await deleteLockedFile(db, request.userId, file);
      forgotten += 1;
    }
    // First, so that a drain indexing one of them has finished and its embedding is seen.
    const neverIndexed = await dropQueuedMessages(db, request.userId, messageIds);
    const messages = await markMessagesForgotten(db, request.userId, messageIds);
    await deleteMessageEmbeddings(
      db,
      request.userId,
      messages.map((message) => message.id),
    );
    // Their words no longer count towards rarity weights, as for a deleted document.
    const counted = messages.filter((message) => !neverIndexed.has(message.id));
    await removeTermCounts(
      db,
      request.userId,
      countTermsByItem(
        await readTerms(
          db,
          counted.map((message) => message.content),
        ),
      ),
      counted.length,
    );
    return { forgotten: forgotten + messages.length };
  });
}
