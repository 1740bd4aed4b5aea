import { z } from 'zod';
import { IMPORT_MAX_MESSAGES, ImportedMessage } from '../memory-messages-import';

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
