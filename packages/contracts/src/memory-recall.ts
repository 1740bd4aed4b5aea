import { z } from 'zod';
import { Id, StoredMessage } from './common';
import { defineRpc } from './define';

// The context memory hands the orchestrator for a turn: for now the most recent messages of the
// conversation, oldest first. Summaries and recalled facts join here with the memory issue.
export const MemoryRecallRequest = z.object({
  userId: Id,
  conversationId: Id,
  recentLimit: z.number().int().min(1).max(500).default(50),
});
export type MemoryRecallRequest = z.input<typeof MemoryRecallRequest>;

export const MemoryRecallResponse = z.object({
  recent: z.array(StoredMessage),
});
export type MemoryRecallResponse = z.infer<typeof MemoryRecallResponse>;

export const memoryRecall = defineRpc('memory.recall', MemoryRecallRequest, MemoryRecallResponse);
