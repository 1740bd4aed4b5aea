import type { Bus } from '@jarvis/bus';
import { memoryInstructionsGet, memoryInstructionsPut } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { getInstructions, putInstructions } from './services/instructions-service';

export function registerInstructionsHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryInstructionsGet, (request) => getInstructions(pool, request)),
    bus.serve(memoryInstructionsPut, (request) => putInstructions(pool, request)),
  ];
}
