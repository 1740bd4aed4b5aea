import { z } from 'zod';
import {
  ConversationsListQuery,
  MemoryConversationsListResponse,
  memoryConversationsList,
} from '../../memory-conversations-list';
import {
  MemoryMessagesListResponse,
  MessagesListQuery,
  memoryMessagesList,
} from '../../memory-messages-list';
import { type Endpoint, json } from '../endpoint';
import {
  ChatGptExport,
  ConversationIdParams,
  ImportChatGptResponse,
  ImportMessagesBody,
  ImportMessagesResponse,
} from '../import-messages';

const IdempotencyHeaders = z.object({ 'Idempotency-Key': z.string().min(1).optional() });

export const CONVERSATIONS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/conversations',
    summary: 'Your conversations, the most recently written to first',
    tag: 'conversations',
    auth: 'user',
    query: ConversationsListQuery,
    status: 200,
    response: json(MemoryConversationsListResponse),
    errors: ['timeout'],
    forward: { rpc: memoryConversationsList },
  },
  {
    method: 'get',
    path: '/v1/conversations/{id}/messages',
    summary: "A conversation's messages, newest first",
    tag: 'conversations',
    auth: 'user',
    params: ConversationIdParams,
    query: MessagesListQuery,
    status: 200,
    response: json(MemoryMessagesListResponse),
    errors: ['not_found', 'timeout'],
    forward: {
      rpc: memoryMessagesList,
      toRequest: ({ params, query, userId }) => ({ ...query, userId, conversationId: params.id }),
    },
  },
  {
    method: 'post',
    path: '/v1/conversations/{id}/messages/import',
    summary: 'Store past messages in a conversation, without running a turn',
    description:
      'The same request again with its Idempotency-Key stores nothing twice and answers as the ' +
      'first did; the key with another body answers 422 and stores nothing. A bad message ' +
      'answers 400 naming it, and nothing is stored.',
    tag: 'conversations',
    auth: 'user',
    params: ConversationIdParams,
    headers: IdempotencyHeaders,
    body: json(ImportMessagesBody),
    status: 200,
    response: json(ImportMessagesResponse),
    errors: ['idempotency_key_reused', 'timeout'],
    handler: 'importMessages',
  },
  {
    method: 'post',
    path: '/v1/conversations/import/chatgpt',
    summary: "Import a ChatGPT data export's conversations.json",
    description: 'Importing the same export again adds nothing.',
    tag: 'conversations',
    auth: 'user',
    body: json(ChatGptExport),
    status: 200,
    response: json(ImportChatGptResponse),
    errors: ['timeout'],
    handler: 'importChatGpt',
  },
];
