import type { Bus } from '@jarvis/bus';
import { memoryAppend, memoryRecall } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { appendMessage, recallContext } from './services/messages-service';

export function registerHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryAppend, (request) => appendMessage(pool, request)),
    bus.serve(memoryRecall, (request) => recallContext(pool, request)),
  ];
}
