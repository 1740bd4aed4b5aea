import { z } from 'zod';
import { Id, TimeZone } from './common';
import { defineEvent } from './define';

export const EXTRACTION_RECALLED_MAX = 200;

// A turn has finished: look for facts worth keeping in it. The message id is `extract:<turnId>`,
// so one turn is extracted once. recalledIds are the memories the turn's prompt already showed,
// which must not come back as new facts.
export const ExtractionRequested = z.object({
  userId: Id,
  conversationId: Id,
  runId: Id,
  turnId: Id,
  userMessageId: Id,
  replyMessageId: Id,
  recalledIds: z.array(Id).max(EXTRACTION_RECALLED_MAX),
  // The user's zone, so that "until Friday" ends at their Friday's midnight; UTC when absent.
  timeZone: TimeZone.optional(),
});
export type ExtractionRequested = z.infer<typeof ExtractionRequested>;

export const extractionRequested = defineEvent('memory.extraction.requested', ExtractionRequested);

export const EXTRACTION_STREAM = 'MEMORY_EXTRACTION';
