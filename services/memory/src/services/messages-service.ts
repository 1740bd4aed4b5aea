import { BusError } from '@jarvis/bus';
import type {
  MemoryAppendRequest,
  MemoryAppendResponse,
  MemoryImportRequest,
  MemoryImportResponse,
} from '@jarvis/contracts';
import { type Pool, withBatchTransaction } from '@jarvis/db';
import { ensureConversation } from '../repositories/conversations-repository';
import { claimImportBatch } from '../repositories/import-batches-repository';
import { appendQueuedMessage, insertMessagesInOrder } from '../repositories/messages-repository';
import { indexMessages } from './index-messages';

export async function appendMessage(
  pool: Pool,
  request: MemoryAppendRequest,
): Promise<MemoryAppendResponse> {
  const message = {
    userId: request.userId,
    conversationId: request.conversationId,
    role: request.role,
    content: request.content,
    metadata: request.metadata ?? {},
    idempotencyKey: request.idempotencyKey,
  };
  let outcome = await appendQueuedMessage(pool, message);
  // A user's first two messages at once: the statement that lost the race to create the default
  // conversation could not see it; the next statement does.
  if (outcome.type === 'no_conversation' && !request.conversationId) {
    outcome = await appendQueuedMessage(pool, message);
  }
  // Someone else's conversation answers exactly like a missing one.
  if (outcome.type === 'no_conversation') throw new BusError('not_found', 'conversation not found');
  return {
    message: outcome.message,
    seq: outcome.seq,
    isDuplicate: outcome.type === 'duplicate',
  };
}

// Stores a past conversation's messages in order without running any turn. The conversation is
// created for the user under the given id; an id that belongs to someone else is "not found".
// With a request hash, the batch key is the client's Idempotency-Key: another request under it
// is refused, and the same one again answers as it did the first time, storing nothing twice.
export async function importMessages(
  pool: Pool,
  request: MemoryImportRequest,
): Promise<MemoryImportResponse> {
  return withBatchTransaction(pool, async (db) => {
    const conversationId = await ensureConversation(db, request.userId, request.conversationId);
    if (!conversationId) throw new BusError('not_found', 'conversation not found');
    if (request.requestHash !== undefined) {
      const firstHash = await claimImportBatch(
        db,
        request.userId,
        request.batchKey,
        request.requestHash,
      );
      if (firstHash !== request.requestHash) {
        throw new BusError(
          'idempotency_key_reused',
          'this Idempotency-Key was used with another request; nothing was imported',
        );
      }
    }
    const inserted = await insertMessagesInOrder(
      db,
      request.userId,
      conversationId,
      request.messages.map((message, offset) => ({
        role: message.role,
        content: message.content,
        author: message.author,
        createdAt: message.createdAt,
        metadata: message.metadata ?? {},
        idempotencyKey: `${request.batchKey}:${request.firstIndex + offset}`,
      })),
    );
    await indexMessages(db, request.userId, conversationId, inserted);
    // Under a key, every message of the slice is stored, now or by the request it repeats.
    return {
      imported: request.requestHash === undefined ? inserted.length : request.messages.length,
    };
  });
}
