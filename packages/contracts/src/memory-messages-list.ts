import { z } from 'zod';
import { Id, StoredMessage } from './common';
import { defineRpc } from './define';

export const MESSAGE_LIST_MAX_LIMIT = 200;
export const MESSAGE_LIST_DEFAULT_LIMIT = 50;

const MessageListLimit = z.number().int().min(1).max(MESSAGE_LIST_MAX_LIMIT);
// A message's place in the store: strictly increasing in the order messages were stored.
const MessageSeq = z.number().int().positive();

// A message as history shows it: with its sequence, the cursor of the next page.
export const HistoryMessage = StoredMessage.extend({ seq: MessageSeq });
export type HistoryMessage = z.infer<typeof HistoryMessage>;

const listFields = {
  limit: MessageListLimit.default(MESSAGE_LIST_DEFAULT_LIMIT),
  // Cursor: only messages stored before this one; pass the previous page's nextBefore.
  before: MessageSeq.optional(),
};

// Not with before: the page that holds this message (of the conversation), with about as many
// newer messages as older ones, so a search hit can be read in its context. Older pages follow
// from nextBefore as usual.
const around = Id.optional();

// memory.messages.list: one of the user's conversations, newest first, forgotten messages left
// out. Another user's conversation answers not_found, exactly like a missing one.
export const MemoryMessagesListRequest = z.object({
  userId: Id,
  conversationId: Id,
  ...listFields,
  around,
});
export type MemoryMessagesListRequest = z.input<typeof MemoryMessagesListRequest>;
export const MemoryMessagesListResponse = z.object({
  messages: z.array(HistoryMessage),
  // Set only when older messages follow.
  nextBefore: MessageSeq.optional(),
});
export type MemoryMessagesListResponse = z.infer<typeof MemoryMessagesListResponse>;
export const memoryMessagesList = defineRpc(
  'memory.messages.list',
  MemoryMessagesListRequest,
  MemoryMessagesListResponse,
);

// HTTP: GET /v1/conversations/{id}/messages?limit=&before=|around= (query strings arrive as text).
export const MessagesListQuery = z.strictObject({
  limit: z.coerce.number().pipe(MessageListLimit).optional(),
  before: z.coerce.number().pipe(MessageSeq).optional(),
  around,
});
