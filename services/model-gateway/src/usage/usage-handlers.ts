import type { Bus } from '@jarvis/bus';
import { modelUsage } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Redis } from 'ioredis';
import { RATE_WINDOW_MS } from './usage-counters';
import type { UsageLimits } from './usage-env';
import { getUsage } from './usage-service';

export type UsageHandlerDeps = {
  pool: Pool;
  redis: Redis;
  limits: UsageLimits;
  // The meter's request-rate window; tests shorten both.
  rateWindowMs?: number;
};

export function registerUsageHandlers(
  bus: Bus,
  deps: UsageHandlerDeps,
): ReturnType<Bus['serve']>[] {
  const read = {
    ...deps,
    namespace: bus.namespace,
    rateWindowMs: deps.rateWindowMs ?? RATE_WINDOW_MS,
  };
  return [bus.serve(modelUsage, (request) => getUsage(read, request))];
}
