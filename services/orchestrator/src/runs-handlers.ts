import type { Bus } from '@jarvis/bus';
import { orchestratorRunsGet, orchestratorRunsList } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { getRun, listRuns } from './services/runs-service';

// Reading runs back: what each turn did, step by step, for the user who sent it.
export function registerRunHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(orchestratorRunsList, (request) => listRuns(pool, request)),
    bus.serve(orchestratorRunsGet, (request) => getRun(pool, request)),
  ];
}
