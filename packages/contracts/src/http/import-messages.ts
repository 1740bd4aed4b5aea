import { z } from 'zod';
import { Id } from '../common';
import { IMPORT_MAX_MESSAGES, ImportedMessage } from '../memory-messages-import';

// /v1/conversations/{id}/…
export const ConversationIdParams = z.strictObject({ id: Id });
export type ConversationIdParams = z.infer<typeof ConversationIdParams>;

// POST /v1/conversations/{id}/messages/import
export const ImportMessagesBody = z.strictObject({
  messages: z
    .array(ImportedMessage)
    .min(1, 'messages must not be empty')
    .max(IMPORT_MAX_MESSAGES, `at most ${IMPORT_MAX_MESSAGES} messages per call`),
});
export type ImportMessagesBody = z.infer<typeof ImportMessagesBody>;

export const ImportMessagesResponse = z.object({
  imported: z.number().int().nonnegative(),
});
export type ImportMessagesResponse = z.infer<typeof ImportMessagesResponse>;

// POST /v1/conversations/import/chatgpt: ChatGPT's data export (`conversations.json`). Each
// conversation is a tree of nodes; the branch the user last saw runs from `current_node` up
// through `parent` links. Only what is needed is described, loosely, so fields OpenAI adds later
// do not break the import.
const ChatGptNode = z.object({
  parent: z.string().nullish(),
  message: z
    .object({
      author: z.object({ role: z.string() }),
      create_time: z.number().nullish(),
      content: z
        .object({ content_type: z.string().optional(), parts: z.array(z.unknown()).optional() })
        .optional(),
    })
    .nullish(),
});

const ChatGptConversation = z.object({
  id: z.string().optional(),
  conversation_id: z.string().optional(),
  title: z.string().nullish(),
  create_time: z.number().nullish(),
  current_node: z.string().nullish(),
  mapping: z.record(z.string(), ChatGptNode),
});

export const ChatGptExport = z
  .array(ChatGptConversation)
  .min(1, 'the export holds no conversation');
export type ChatGptExport = z.infer<typeof ChatGptExport>;

export const ImportChatGptResponse = z.object({
  conversations: z.number().int().nonnegative(),
  imported: z.number().int().nonnegative(),
});
export type ImportChatGptResponse = z.infer<typeof ImportChatGptResponse>;
