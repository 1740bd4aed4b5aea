import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { usageEnvShape, usageLimitsFrom } from './usage-env';

const Env = z.object(usageEnvShape);

describe('usage limits from the environment', () => {
  it('defaults to a cost cap and a request rate, with no token cap', () => {
    expect(usageLimitsFrom(Env.parse({}))).toEqual({
      dailyTokens: 0,
      dailyCostUsd: 5,
      requestsPerMinute: 120,
    });
  });

  it('reads each limit, 0 turning it off', () => {
    const env = Env.parse({
      USER_DAILY_TOKEN_LIMIT: '200000',
      USER_DAILY_COST_LIMIT_USD: '0.5',
      USER_REQUESTS_PER_MINUTE: '0',
    });

    expect(usageLimitsFrom(env)).toEqual({
      dailyTokens: 200_000,
      dailyCostUsd: 0.5,
      requestsPerMinute: 0,
    });
  });

  it.each([
    ['USER_DAILY_TOKEN_LIMIT', '-1'],
    ['USER_DAILY_TOKEN_LIMIT', '1.5'],
    ['USER_DAILY_COST_LIMIT_USD', 'lots'],
    ['USER_REQUESTS_PER_MINUTE', '-5'],
  ])('refuses %s=%s', (name, value) => {
    expect(Env.safeParse({ [name]: value }).success).toBe(false);
  });
});
