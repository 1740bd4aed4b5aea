import { z } from 'zod';

// Per-user budgets. Spread into the service's Env schema; 0 turns a limit off.
export const usageEnvShape = {
  // Tokens (input + output, all purposes) one user may use per UTC day. 0: no limit, the
  // default: local models cost nothing, and the cost cap below guards the hosted ones.
  USER_DAILY_TOKEN_LIMIT: z.coerce.number().int().min(0).default(0),
  // US dollars one user may spend on hosted models per UTC day. 0: no limit. The default stops a
  // runaway agent loop from running up a bill; local models cost 0 and never reach it.
  USER_DAILY_COST_LIMIT_USD: z.coerce.number().min(0).default(5),
  // Chat and utility calls one user may start in any 60 s (embeddings are not counted: indexing
  // sends them in bulk). 0: no limit. One turn makes a few calls (tool steps, extraction).
  USER_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(120),
};

const UsageEnv = z.object(usageEnvShape);
type UsageEnv = z.output<typeof UsageEnv>;

// 0 means no limit, as in the environment.
export type UsageLimits = {
  dailyTokens: number;
  dailyCostUsd: number;
  requestsPerMinute: number;
};

export function usageLimitsFrom(env: UsageEnv): UsageLimits {
  return {
    dailyTokens: env.USER_DAILY_TOKEN_LIMIT,
    dailyCostUsd: env.USER_DAILY_COST_LIMIT_USD,
    requestsPerMinute: env.USER_REQUESTS_PER_MINUTE,
  };
}
