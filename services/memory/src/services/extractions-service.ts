import { randomUUID } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import type {
  Extraction,
  ExtractionChange,
  Fact,
  MemoryExtractionsListRequest,
  MemoryExtractionsListResponse,
  MemoryExtractionsUndoRequest,
  MemoryExtractionsUndoResponse,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, withTransaction } from '@jarvis/db';
import type { z } from 'zod';
import {
  insertExtraction,
  listExtractions,
  lockExtraction,
  markExtractionUndone,
  type StoredExtraction,
} from '../repositories/extractions-repository';
import { lockFact } from '../repositories/facts-repository';
import { invalidateFact, isOpen, type StoredFact, storeFact } from './facts-service';

type ListRequest = z.output<typeof MemoryExtractionsListRequest>;

// One operation as extraction, the remember command and the remember tool store it.
export type AppliedOperation = {
  op: ExtractionChange['op'];
  factId?: string;
  // An update's new version.
  newFactId?: string;
  content?: string;
  reason?: string;
  // Why nothing was changed ("already known", "not one of the facts shown", …).
  ignored?: string;
  // "remember this": the message the fact was taken from, condensed later when it is long.
  referentMessageId?: string;
  // The end the updated or invalidated version had, which closing it overwrote: an undo gives
  // the version back with it.
  replacedValidTo?: string;
};

// What an update or an invalidation records of the version it closes.
export function replacedEnd(fact: Pick<Fact, 'validTo'>): { replacedValidTo?: string } {
  return fact.validTo === null ? {} : { replacedValidTo: fact.validTo };
}

// A fact the agent's remember tool stored during a turn is something Jarvis learned too: it gets
// its own row (the turn's extraction has one of its own), so the Learned view shows and undoes it.
export async function recordRememberedByTool(
  db: PoolClient,
  userId: string,
  turnId: string,
  stored: StoredFact,
): Promise<void> {
  await insertExtraction(db, {
    runId: randomUUID(),
    userId,
    turnId,
    status: 'done',
    operations: [operationOfStored(stored)],
    reason: null,
  });
}

// What storing one fact did: added it, found it known, or gave the known fact a later end as a
// new version (an update, so undoing it puts the known version back).
export function operationOfStored({ fact, isDuplicate, supersedes }: StoredFact): AppliedOperation {
  if (supersedes) {
    return {
      op: 'update',
      factId: supersedes.id,
      newFactId: fact.id,
      content: fact.content,
      ...replacedEnd(supersedes),
    };
  }
  return { op: isDuplicate ? 'noop' : 'add', factId: fact.id, content: fact.content };
}

export async function listLearned(
  pool: Pool,
  request: ListRequest,
): Promise<MemoryExtractionsListResponse> {
  const before = request.before === undefined ? undefined : new Date(request.before);
  // One more than asked says whether there is a next page.
  const rows = await listExtractions(pool, request.userId, request.limit + 1, before);
  const page = rows.slice(0, request.limit);
  const last = page.at(-1);
  return {
    extractions: page.map(toExtraction),
    ...(rows.length > request.limit && last ? { nextBefore: last.createdAt.toISOString() } : {}),
  };
}

// Puts the user's facts back as they were before the extraction, as new versions: history keeps
// both what was learned and its undoing.
export async function undoExtraction(
  pool: Pool,
  request: MemoryExtractionsUndoRequest,
): Promise<MemoryExtractionsUndoResponse> {
  return withTransaction(pool, async (db) => {
    const extraction = await lockExtraction(db, request.userId, request.id);
    if (!extraction) throw new BusError('not_found', 'extraction not found');
    if (extraction.undoneAt) throw new BusError('conflict', 'extraction was already undone');
    const operations = extraction.operations as AppliedOperation[];
    for (const operation of [...operations].reverse()) {
      if (!operation.ignored) await undoOperation(db, request.userId, operation);
    }
    const undoneAt = await markExtractionUndone(db, extraction.id);
    return { extraction: toExtraction({ ...extraction, undoneAt }) };
  });
}

async function undoOperation(
  db: PoolClient,
  userId: string,
  operation: AppliedOperation,
): Promise<void> {
  switch (operation.op) {
    case 'add':
      if (operation.factId) await closeIfOpen(db, userId, operation.factId);
      return;
    case 'update': {
      if (!operation.factId || !operation.newFactId) return;
      await closeIfOpen(db, userId, operation.newFactId);
      await reopenAsCopy(db, userId, operation.factId, operation.replacedValidTo);
      return;
    }
    case 'invalidate':
      if (operation.factId) {
        await reopenAsCopy(db, userId, operation.factId, operation.replacedValidTo);
      }
      return;
    case 'noop':
      return;
  }
}

// A fact the user has changed or forgotten since is left as the user left it.
async function closeIfOpen(db: PoolClient, userId: string, factId: string): Promise<void> {
  const fact = await lockFact(db, userId, factId);
  if (fact && isOpen(fact)) await invalidateFact(db, userId, fact.id, null);
}

// With the end it had before it was closed; one that has passed since is not reopened, as it
// would have ended by now.
async function reopenAsCopy(
  db: PoolClient,
  userId: string,
  factId: string,
  validTo: string | undefined,
): Promise<void> {
  const fact = await lockFact(db, userId, factId);
  if (!fact || isOpen(fact)) return;
  const end = validTo === undefined ? undefined : new Date(validTo);
  if (end && end.getTime() <= Date.now()) return;
  await storeFact(db, userId, {
    category: fact.category,
    content: fact.content,
    tags: fact.tags,
    importance: fact.importance,
    sourceMessageIds: fact.sourceMessageIds,
    validTo: end,
  });
}

function toExtraction(stored: StoredExtraction): Extraction {
  const operations = stored.operations as AppliedOperation[];
  return {
    id: stored.id,
    turnId: stored.turnId,
    createdAt: stored.createdAt.toISOString(),
    undoneAt: stored.undoneAt?.toISOString() ?? null,
    changes: operations.map(toChange),
  };
}

// What the user sees of one operation: an ignored one changed nothing, so it is a noop.
function toChange(operation: AppliedOperation): ExtractionChange {
  const text = operation.content ?? '';
  if (operation.ignored || operation.op === 'noop') {
    return { op: 'noop', factId: operation.factId ?? null, text };
  }
  if (operation.op === 'update') {
    return { op: 'update', factId: operation.newFactId ?? operation.factId ?? null, text };
  }
  return { op: operation.op, factId: operation.factId ?? null, text };
}
