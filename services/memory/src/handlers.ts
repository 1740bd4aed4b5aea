import type { Bus } from '@jarvis/bus';
import { memoryAppend, memoryImport, memoryRecall, memorySearch } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { appendMessage, importMessages, recallContext } from './services/messages-service';
import { searchMemory } from './services/search-service';

export function registerHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryAppend, (request) => appendMessage(pool, request)),
    bus.serve(memoryRecall, (request) => recallContext(pool, request)),
    bus.serve(memoryImport, (request) => importMessages(pool, request)),
    bus.serve(memorySearch, (request) => searchMemory(pool, request)),
  ];
}
