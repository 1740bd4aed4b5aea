import type { Bus } from '@jarvis/bus';
import {
  ConversationsListQuery,
  Id,
  ImportMessagesBody,
  MessagesListQuery,
  memoryConversationsList,
  memoryMessagesList,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { z } from 'zod';
import { principalOf } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { ChatGptExport, parseChatGptExport } from '../services/chatgpt-export';
import { importMessages } from '../services/import-messages';
import { parseBody } from './parse-body';

export type ConversationsRouterDeps = { bus: Bus; pool: Pool; importBodyLimitBytes: number };

const ConversationParams = z.object({ id: Id });

// /v1/conversations. Mounted before the general JSON parser: an import may be far larger than
// any other request.
export function createConversationsRouter(deps: ConversationsRouterDeps): Router {
  const router = Router();
  // GET /?limit=&before= (most recently written to first; before: the last page's nextBefore).
  // defaultConversationId names the persistent conversation, wherever it falls.
  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(ConversationsListQuery, req.query);
    res.json(
      await deps.bus.request(memoryConversationsList, { ...query, userId: principal.userId }),
    );
  });
  // GET /{id}/messages?limit=&before= (newest first; before: the last page's nextBefore, the
  // sequence of its oldest message). Forgotten messages are left out.
  router.get('/:id/messages', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(ConversationParams, req.params);
    const query = parseBody(MessagesListQuery, req.query);
    res.json(
      await deps.bus.request(memoryMessagesList, {
        ...query,
        userId: principal.userId,
        conversationId: id,
      }),
    );
  });
  router.post('/:id/messages/import', jsonBody(deps.importBodyLimitBytes), async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(ConversationParams, req.params);
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
  });
  // ChatGPT's data export, as downloaded: every conversation becomes one of the user's own.
  router.post('/import/chatgpt', jsonBody(deps.importBodyLimitBytes), async (req, res) => {
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
  });
  return router;
}
