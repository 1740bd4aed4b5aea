import type { Bus } from '@jarvis/bus';
import { schedulerJobsList } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { listJobs } from './repositories/jobs-repository';

export function registerHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(schedulerJobsList, async (request) => ({
      jobs: await listJobs(pool, request.userId),
    })),
  ];
}
