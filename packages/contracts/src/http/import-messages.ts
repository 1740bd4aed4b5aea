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

// POST /v1/conversations/import/chatgpt
export const ImportChatGptResponse = z.object({
  conversations: z.number().int().nonnegative(),
  imported: z.number().int().nonnegative(),
});
export type ImportChatGptResponse = z.infer<typeof ImportChatGptResponse>;
