import { BusError } from '@jarvis/bus';
import type {
  MemoryConversationsListRequest,
  MemoryConversationsListResponse,
  MemoryMessagesGetRequest,
  MemoryMessagesGetResponse,
  MemoryMessagesListRequest,
  MemoryMessagesListResponse,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { z } from 'zod';
import {
  findConversation,
  findDefaultConversation,
  listConversations,
} from '../repositories/conversations-repository';
import {
  findMessage,
  listConversationMessages,
  listMessagesAround,
} from '../repositories/messages-repository';

const TITLE_MAX_CHARS = 80;

type MessagesRequest = z.output<typeof MemoryMessagesListRequest>;
type ConversationsRequest = z.output<typeof MemoryConversationsListRequest>;

export async function getMessage(
  pool: Pool,
  request: z.output<typeof MemoryMessagesGetRequest>,
): Promise<MemoryMessagesGetResponse> {
  const message = await findMessage(pool, request.userId, request.id);
  if (!message) throw new BusError('not_found', 'message not found');
  return { message };
}

// A page of a conversation, newest first. One row more than asked tells whether older ones
// follow, without counting them.
export async function listMessages(
  pool: Pool,
  request: MessagesRequest,
): Promise<MemoryMessagesListResponse> {
  const conversationId = await findConversation(pool, request.userId, request.conversationId);
  // Someone else's conversation answers exactly like a missing one.
  if (!conversationId) throw new BusError('not_found', 'conversation not found');
  if (request.around !== undefined) {
    if (request.before !== undefined) {
      throw new BusError('bad_request', 'around and before cannot be combined');
    }
    return listMessagesAroundOne(pool, request, conversationId, request.around);
  }
  const { limit } = request;
  const rows = await listConversationMessages(
    pool,
    request.userId,
    conversationId,
    limit + 1,
    request.before,
  );
  const messages = rows.slice(0, limit);
  const last = messages.at(-1);
  return {
    messages,
    ...(rows.length > limit && last ? { nextBefore: last.seq } : {}),
  };
}

// The page that holds a message: half of it newer messages, half older, leaning to one side when
// the other runs out, so a message near either end still comes with a full page.
async function listMessagesAroundOne(
  pool: Pool,
  request: MessagesRequest,
  conversationId: string,
  messageId: string,
): Promise<MemoryMessagesListResponse> {
  const { limit } = request;
  // One older row more than a page can take tells whether older ones follow.
  const { fromIt, before } = await listMessagesAround(
    pool,
    request.userId,
    conversationId,
    messageId,
    limit + 1,
  );
  if (fromIt[0]?.id !== messageId) throw new BusError('not_found', 'message not found');
  const newerCount = Math.min(fromIt.length, Math.max(Math.ceil(limit / 2), limit - before.length));
  const older = before.slice(0, limit - newerCount);
  const messages = [...fromIt.slice(0, newerCount).reverse(), ...older];
  const last = messages.at(-1);
  return {
    messages,
    ...(before.length > older.length && last ? { nextBefore: last.seq } : {}),
  };
}

export async function listUserConversations(
  pool: Pool,
  request: ConversationsRequest,
): Promise<MemoryConversationsListResponse> {
  const { limit } = request;
  const rows = await listConversations(pool, request.userId, limit + 1, request.before);
  const conversations = rows.slice(0, limit).map((row) => ({
    id: row.id,
    title: row.opening === null ? null : titleOf(row.opening),
    isDefault: row.isDefault,
    createdAt: row.createdAt.toISOString(),
    lastMessageAt: row.lastMessageAt.toISOString(),
    lastMessageSeq: row.lastMessageSeq,
  }));
  const last = conversations.at(-1);
  return {
    conversations,
    ...(rows.length > limit && last ? { nextBefore: last.lastMessageSeq } : {}),
    defaultConversationId: (await findDefaultConversation(pool, request.userId)) ?? null,
  };
}

// The first line of the opening message, cut at a word where it can be.
function titleOf(opening: string): string | null {
  const line = opening.trim().split('\n')[0]?.trim() ?? '';
  if (line === '') return null;
  if (line.length <= TITLE_MAX_CHARS) return line;
  const cut = line.slice(0, TITLE_MAX_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
