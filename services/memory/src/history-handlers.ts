import type { Bus } from '@jarvis/bus';
import { memoryConversationsList, memoryMessagesGet, memoryMessagesList } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { getMessage, listMessages, listUserConversations } from './services/history-service';

// What the user reads back of their conversations: the list, each one's messages, and one
// message (a turn's reply, when its outcome is told again).
export function registerHistoryHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryMessagesList, (request) => listMessages(pool, request)),
    bus.serve(memoryMessagesGet, (request) => getMessage(pool, request)),
    bus.serve(memoryConversationsList, (request) => listUserConversations(pool, request)),
  ];
}
