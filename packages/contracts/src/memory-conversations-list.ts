import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

export const CONVERSATION_LIST_MAX_LIMIT = 100;
export const CONVERSATION_LIST_DEFAULT_LIMIT = 20;

const ConversationListLimit = z.number().int().min(1).max(CONVERSATION_LIST_MAX_LIMIT);
const Timestamp = z.iso.datetime({ offset: true });
const MessageSeq = z.number().int().positive();

export const ConversationSummary = z.object({
  id: Id,
  // The start of its first user message (conversations have no names of their own); null when
  // it has none, e.g. one that holds only a mission's report.
  title: z.string().nullable(),
  // The user's single persistent conversation, where messages without a conversation go.
  isDefault: z.boolean(),
  createdAt: Timestamp,
  lastMessageAt: Timestamp,
  // The sequence of its latest message: the listing's order and cursor.
  lastMessageSeq: MessageSeq,
});
export type ConversationSummary = z.infer<typeof ConversationSummary>;

const listFields = {
  limit: ConversationListLimit.default(CONVERSATION_LIST_DEFAULT_LIMIT),
  // Cursor: only conversations whose latest message was stored before this sequence; pass the
  // previous page's nextBefore.
  before: MessageSeq.optional(),
};

// memory.conversations.list: the user's conversations that hold a message (not counting
// forgotten ones), the most recently written to first.
export const MemoryConversationsListRequest = z.object({ userId: Id, ...listFields });
export type MemoryConversationsListRequest = z.input<typeof MemoryConversationsListRequest>;
export const MemoryConversationsListResponse = z.object({
  conversations: z.array(ConversationSummary),
  // Set only when more follow.
  nextBefore: MessageSeq.optional(),
  // The persistent conversation, wherever it falls in the order (an import can push it down);
  // null until the user's first message.
  defaultConversationId: Id.nullable(),
});
export type MemoryConversationsListResponse = z.infer<typeof MemoryConversationsListResponse>;
export const memoryConversationsList = defineRpc(
  'memory.conversations.list',
  MemoryConversationsListRequest,
  MemoryConversationsListResponse,
);

// HTTP: GET /v1/conversations?limit=&before=
export const ConversationsListQuery = z.strictObject({
  limit: z.coerce.number().pipe(ConversationListLimit).optional(),
  before: z.coerce.number().pipe(MessageSeq).optional(),
});
