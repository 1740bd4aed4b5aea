import { BusError } from '@jarvis/bus';
import {
  findUsageRangeProblem,
  type ModelUsageResponse,
  USAGE_RANGE_DEFAULT_DAYS,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Redis } from 'ioredis';
import { readDayCounters } from './usage-counters';
import type { UsageLimits } from './usage-env';
import { listUsageDays } from './usage-repository';
import { addDays, fromNanos, nextUtcMidnight, toNanos, utcDay } from './usage-units';

export type UsageReadDeps = {
  pool: Pool;
  redis: Redis;
  namespace: string;
  limits: UsageLimits;
  rateWindowMs: number;
};

export type UsageQueryInput = {
  userId: string;
  from?: string | undefined;
  to?: string | undefined;
};

// A user's usage history from the rollups, and today's totals and what is left of the budgets
// from the same Redis counters the meter checks.
export async function getUsage(
  deps: UsageReadDeps,
  query: UsageQueryInput,
  now = new Date(),
): Promise<ModelUsageResponse> {
  const today = utcDay(now);
  const to = query.to ?? (query.from ? maxDay(query.from, today) : today);
  const from = query.from ?? addDays(to, -(USAGE_RANGE_DEFAULT_DAYS - 1));
  const problem = findUsageRangeProblem(from, to);
  if (problem) throw new BusError('bad_request', `${problem.field}: ${problem.message}`);

  const [days, counters] = await Promise.all([
    listUsageDays(deps.pool, query.userId, from, to),
    readDayCounters(deps.redis, deps.namespace, query.userId, today, deps.rateWindowMs),
  ]);
  const { limits } = deps;
  const usedTokens = counters.inputTokens + counters.outputTokens;
  const limitCostNanos = toNanos(limits.dailyCostUsd);
  return {
    from,
    to,
    days,
    today: {
      day: today,
      inputTokens: counters.inputTokens,
      outputTokens: counters.outputTokens,
      costUsd: fromNanos(counters.costNanos),
      requests: counters.requests,
    },
    limits: {
      dailyTokens: limitOrNull(limits.dailyTokens),
      dailyCostUsd: limitOrNull(limits.dailyCostUsd),
      requestsPerMinute: limitOrNull(limits.requestsPerMinute),
    },
    remaining: {
      dailyTokens: limits.dailyTokens > 0 ? Math.max(limits.dailyTokens - usedTokens, 0) : null,
      dailyCostUsd:
        limitCostNanos > 0 ? fromNanos(Math.max(limitCostNanos - counters.costNanos, 0)) : null,
      requestsThisMinute:
        limits.requestsPerMinute > 0
          ? Math.max(limits.requestsPerMinute - counters.recentRequests, 0)
          : null,
    },
    resetsAt: nextUtcMidnight(now).toISOString(),
  };
}

function limitOrNull(limit: number): number | null {
  return limit > 0 ? limit : null;
}

// A range that starts in the future ends on its first day rather than today.
function maxDay(a: string, b: string): string {
  return a > b ? a : b;
}
