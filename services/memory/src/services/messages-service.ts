import { BusError } from '@jarvis/bus';
import type {
  MemoryAppendRequest,
  MemoryAppendResponse,
  MemoryImportRequest,
  MemoryImportResponse,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import {
  ensureConversation,
  ensureDefaultConversation,
  findConversation,
} from '../repositories/conversations-repository';
import { queueMessageIndex } from '../repositories/index-queue-repository';
import { insertMessage, insertMessagesInOrder } from '../repositories/messages-repository';
import { indexMessages } from './index-messages';

export async function appendMessage(
  pool: Pool,
  request: MemoryAppendRequest,
): Promise<MemoryAppendResponse> {
  return withTransaction(pool, async (db) => {
    const conversationId = request.conversationId
      ? await findConversation(db, request.userId, request.conversationId)
      : await ensureDefaultConversation(db, request.userId);
    // Someone else's conversation answers exactly like a missing one.
    if (!conversationId) throw new BusError('not_found', 'conversation not found');
    const stored = await insertMessage(db, {
      userId: request.userId,
      conversationId,
      role: request.role,
      content: request.content,
      metadata: request.metadata ?? {},
      idempotencyKey: request.idempotencyKey,
    });
    // Indexed off the caller's path (index-messages.ts); queued in this transaction, so a
    // stored message is never left unsearchable.
    if (!stored.isDuplicate) {
      await queueMessageIndex(db, {
        id: stored.message.id,
        userId: request.userId,
        conversationId,
      });
    }
    return stored;
  });
}

// Stores a past conversation's messages in order without running any turn. The conversation is
// created for the user under the given id; an id that belongs to someone else is "not found".
export async function importMessages(
  pool: Pool,
  request: MemoryImportRequest,
): Promise<MemoryImportResponse> {
  return withTransaction(pool, async (db) => {
    const conversationId = await ensureConversation(db, request.userId, request.conversationId);
    if (!conversationId) throw new BusError('not_found', 'conversation not found');
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
    return { imported: inserted.length };
  });
}
