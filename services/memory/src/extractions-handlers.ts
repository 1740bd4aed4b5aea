import type { Bus } from '@jarvis/bus';
import { memoryExtractionsList, memoryExtractionsUndo } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { listLearned, undoExtraction } from './services/extractions-service';

// What Jarvis learned, for the Learned view: each extraction's changes, and their undoing.
export function registerExtractionHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryExtractionsList, (request) => listLearned(pool, request)),
    bus.serve(memoryExtractionsUndo, (request) => undoExtraction(pool, request)),
  ];
}
