import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, MessageRole, Timestamp } from './common';
import { defineRpc } from './define';

export const IMPORT_MAX_MESSAGES = 5_000;

export const ImportedMessage = z.strictObject({
  role: MessageRole,
  content: z.string().min(1).max(MESSAGE_MAX_CHARS),
  createdAt: Timestamp,
  // Who said it, when the role alone does not tell (an imported group chat).
  author: z.string().min(1).max(200).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type ImportedMessage = z.infer<typeof ImportedMessage>;

// Stores past messages without running any turn. The conversation is created for the user if it
// does not exist. Message keys make a retried batch store nothing twice.
export const MemoryImportRequest = z.object({
  userId: Id,
  conversationId: Id,
  // Message i of the whole import gets idempotency key `<batchKey>:<i>`; firstIndex is the
  // position of this slice's first message.
  batchKey: z.string().min(1).max(200),
  firstIndex: z.number().int().nonnegative(),
  // SHA-256 (hex) of the client's whole request, when batchKey is its Idempotency-Key: the first
  // request under a key is remembered, another is refused (idempotency_key_reused), and the same
  // one again answers `imported` as it did the first time.
  requestHash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  messages: z.array(ImportedMessage).min(1).max(IMPORT_MAX_MESSAGES),
});
export type MemoryImportRequest = z.infer<typeof MemoryImportRequest>;

export const MemoryImportResponse = z.object({
  imported: z.number().int().nonnegative(),
});
export type MemoryImportResponse = z.infer<typeof MemoryImportResponse>;

export const memoryImport = defineRpc(
  'memory.messages.import',
  MemoryImportRequest,
  MemoryImportResponse,
);
