import { z } from 'zod';
import { Id, Timestamp } from './common';
import { defineRpc } from './define';

// What Jarvis learned: one extraction per turn's fact extraction, per "remember" command and per
// remember tool call, with the facts it added, changed or closed. A wrong one is undone once.

export const EXTRACTIONS_LIST_MAX_LIMIT = 100;
export const EXTRACTIONS_LIST_DEFAULT_LIMIT = 20;

export const ExtractionOp = z.enum(['add', 'update', 'invalidate', 'noop']);
export type ExtractionOp = z.infer<typeof ExtractionOp>;

// One change: for an update, factId is the new version and text its words; for an invalidate,
// the closed fact; for a noop, the fact that already said it, when there is one.
export const ExtractionChange = z.object({
  op: ExtractionOp,
  factId: Id.nullable(),
  text: z.string(),
});
export type ExtractionChange = z.infer<typeof ExtractionChange>;

export const Extraction = z.object({
  id: Id,
  // Null for a "remember" command whose turn has not been extracted yet.
  turnId: Id.nullable(),
  createdAt: Timestamp,
  undoneAt: Timestamp.nullable(),
  changes: z.array(ExtractionChange),
});
export type Extraction = z.infer<typeof Extraction>;

const ExtractionsListLimit = z.number().int().min(1).max(EXTRACTIONS_LIST_MAX_LIMIT);

// memory.extractions.list: newest first; nextBefore is the `before` of the next page.
export const MemoryExtractionsListRequest = z.object({
  userId: Id,
  limit: ExtractionsListLimit.default(EXTRACTIONS_LIST_DEFAULT_LIMIT),
  before: Timestamp.optional(),
});
export type MemoryExtractionsListRequest = z.input<typeof MemoryExtractionsListRequest>;
export const MemoryExtractionsListResponse = z.object({
  extractions: z.array(Extraction),
  nextBefore: Timestamp.optional(),
});
export type MemoryExtractionsListResponse = z.infer<typeof MemoryExtractionsListResponse>;
export const memoryExtractionsList = defineRpc(
  'memory.extractions.list',
  MemoryExtractionsListRequest,
  MemoryExtractionsListResponse,
);

// memory.extractions.undo: an add is closed; an update closes the new version and brings the old
// words back as a new open fact; an invalidate re-opens the closed fact as a copy. Twice: conflict.
export const MemoryExtractionsUndoRequest = z.object({ userId: Id, id: Id });
export type MemoryExtractionsUndoRequest = z.infer<typeof MemoryExtractionsUndoRequest>;
export const MemoryExtractionsUndoResponse = z.object({ extraction: Extraction });
export type MemoryExtractionsUndoResponse = z.infer<typeof MemoryExtractionsUndoResponse>;
export const memoryExtractionsUndo = defineRpc(
  'memory.extractions.undo',
  MemoryExtractionsUndoRequest,
  MemoryExtractionsUndoResponse,
);

// HTTP under /v1/memory/extractions; the user comes from the API key.
export const ExtractionsListQuery = z.strictObject({
  limit: z.coerce.number().pipe(ExtractionsListLimit).optional(),
  before: Timestamp.optional(),
});
export const ExtractionIdParams = z.strictObject({ id: Id });
