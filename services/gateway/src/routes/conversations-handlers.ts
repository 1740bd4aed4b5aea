import type { Bus } from '@jarvis/bus';
import {
  ChatGptExport,
  ConversationIdParams,
  type GatewayHandler,
  ImportMessagesBody,
} from '@jarvis/contracts';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { parseChatGptExport } from '../services/chatgpt-export';
import { importMessages } from '../services/import-messages';
import { parseBody } from './parse-body';

export type ConversationsHandlersDeps = { bus: Bus; importBodyLimitBytes: number };

// Imports into conversations: their bodies may be far larger than any other request, so they
// are parsed here, within the import limit, rather than within the general one.
export function createConversationsHandlers(
  deps: ConversationsHandlersDeps,
): Record<Extract<GatewayHandler, 'importMessages' | 'importChatGpt'>, RequestHandler[]> {
  const importBody = jsonBody(deps.importBodyLimitBytes);
  return {
    importMessages: [
      importBody,
      async (req, res) => {
        const principal = principalOf(req);
        const { id } = parseBody(ConversationIdParams, req.params);
        const body = parseBody(ImportMessagesBody, req.body);
        res.json(
          await importMessages(deps.bus, {
            userId: principal.userId,
            conversationId: id,
            messages: body.messages,
            idempotencyKey: req.get('idempotency-key'),
            isClientKey: true,
          }),
        );
      },
    ],

    // ChatGPT's data export, as downloaded: every conversation becomes one of the user's own.
    importChatGpt: [
      importBody,
      async (req, res) => {
        const principal = principalOf(req);
        const data = parseBody(ChatGptExport, req.body);
        let imported = 0;
        const conversations = parseChatGptExport(principal.userId, data);
        for (const conversation of conversations) {
          const result = await importMessages(deps.bus, {
            userId: principal.userId,
            conversationId: conversation.conversationId,
            messages: conversation.messages,
            idempotencyKey: `chatgpt:${conversation.sourceId}`,
            isClientKey: false,
          });
          imported += result.imported;
        }
        res.json({ conversations: conversations.length, imported });
      },
    ],
  };
}
