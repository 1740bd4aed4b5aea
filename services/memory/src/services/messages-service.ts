import { BusError } from '@jarvis/bus';
import type {
  MemoryAppendRequest,
  MemoryAppendResponse,
  MemoryRecallResponse,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import {
  ensureDefaultConversation,
  findConversation,
} from '../repositories/conversations-repository';
import { insertMessage, listRecentMessages } from '../repositories/messages-repository';

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
    return insertMessage(db, {
      userId: request.userId,
      conversationId,
      role: request.role,
      content: request.content,
      metadata: request.metadata ?? {},
      idempotencyKey: request.idempotencyKey,
    });
  });
}

export async function recallContext(
  pool: Pool,
  request: { userId: string; conversationId: string; recentLimit: number },
): Promise<MemoryRecallResponse> {
  const conversationId = await findConversation(pool, request.userId, request.conversationId);
  if (!conversationId) throw new BusError('not_found', 'conversation not found');
  const recent = await listRecentMessages(
    pool,
    request.userId,
    conversationId,
    request.recentLimit,
  );
  return { recent };
}
