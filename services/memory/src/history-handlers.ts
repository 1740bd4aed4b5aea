import type { Bus } from '@jarvis/bus';
import { memoryConversationsList, memoryMessagesList } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { listMessages, listUserConversations } from './services/history-service';

// What the user reads back of their conversations: the list, and each one's messages.
export function registerHistoryHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryMessagesList, (request) => listMessages(pool, request)),
    bus.serve(memoryConversationsList, (request) => listUserConversations(pool, request)),
  ];
}
