import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, MessageRole, StoredMessage } from './common';
import { defineRpc } from './define';

// Stores one message. Without conversationId it goes to the user's single persistent
// conversation, created on first use. The idempotency key makes a retried append a no-op that
// returns the message stored the first time.
export const MemoryAppendRequest = z.object({
  userId: Id,
  conversationId: Id.optional(),
  role: MessageRole,
  content: z.string().min(1).max(MESSAGE_MAX_CHARS),
  idempotencyKey: z.string().min(1).max(200).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type MemoryAppendRequest = z.infer<typeof MemoryAppendRequest>;

export const MemoryAppendResponse = z.object({
  message: StoredMessage,
  // The message's place in the order messages were stored (ascending, never reused): a
  // conversation's turns are answered in this order. Timestamps cannot order them: two
  // transactions' clocks are read before either stores its message.
  seq: z.number().int().positive(),
  isDuplicate: z.boolean(),
});
export type MemoryAppendResponse = z.infer<typeof MemoryAppendResponse>;

export const memoryAppend = defineRpc(
  'memory.messages.append',
  MemoryAppendRequest,
  MemoryAppendResponse,
);
