import { z } from 'zod';
import { Id } from './common';
import { defineEvent } from './define';

// A conversation's unsummarised tail has grown past its threshold: summarise its oldest part.
// The message id is the tail's first message, so one tail is summarised once.
export const CompactionRequested = z.object({
  userId: Id,
  conversationId: Id,
});
export type CompactionRequested = z.infer<typeof CompactionRequested>;

export const compactionRequested = defineEvent('memory.compaction.requested', CompactionRequested);

export const COMPACTION_STREAM = 'MEMORY_COMPACTION';
