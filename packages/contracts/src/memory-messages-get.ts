import { z } from 'zod';
import { Id, StoredMessage } from './common';
import { defineRpc } from './define';

// memory.messages.get: one of the user's messages by id, as a turn's outcome told again shows its
// reply (the run keeps only the reply's id). A forgotten message, or another user's, answers
// not_found exactly like a missing one.
export const MemoryMessagesGetRequest = z.object({ userId: Id, id: Id });
export type MemoryMessagesGetRequest = z.input<typeof MemoryMessagesGetRequest>;
export const MemoryMessagesGetResponse = z.object({ message: StoredMessage });
export type MemoryMessagesGetResponse = z.infer<typeof MemoryMessagesGetResponse>;
export const memoryMessagesGet = defineRpc(
  'memory.messages.get',
  MemoryMessagesGetRequest,
  MemoryMessagesGetResponse,
);
