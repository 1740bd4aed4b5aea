import type { Bus } from '@jarvis/bus';
import {
  memoryFactsForget,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
  memoryFactsUpdate,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { forgetFact, getFact, listFacts, rememberFact, updateFact } from './services/facts-service';

export function registerFactHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryFactsList, (request) => listFacts(pool, request)),
    bus.serve(memoryFactsGet, (request) => getFact(pool, request)),
    bus.serve(memoryFactsRemember, (request) => rememberFact(pool, request)),
    bus.serve(memoryFactsUpdate, (request) => updateFact(pool, request)),
    bus.serve(memoryFactsForget, (request) => forgetFact(pool, request)),
  ];
}
