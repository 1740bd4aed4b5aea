import { Redis } from 'ioredis';

// The service's one Redis connection (budgets, cooldowns, the embedding cache), not yet
// connected. Auto-pipelining puts the commands issued in one turn of the event loop in one
// write: under load that is most of the usage meter's counts and admits (see UsageMeter.record).
export function createRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true, enableAutoPipelining: true });
}
