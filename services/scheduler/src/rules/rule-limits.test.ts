import { describe, expect, it } from 'vitest';
import type { Rule } from './rule';
import { maxRunsPerDay, shortestGapMinutes } from './rule-limits';

const cron = (expression: string): Rule => ({
  kind: 'cron',
  cron: expression,
  timeZone: 'Europe/Oslo',
});

describe('shortestGapMinutes', () => {
  it.each([
    ['*/5 * * * *', 5],
    ['0,10,45 * * * *', 10],
    ['50 * * * *', 60],
    // 23:50 to 00:05 the next day.
    ['5,50 0,23 * * *', 15],
    ['0 9 * * *', 1440],
    ['0 9 * * 1-5', 1440],
    ['0 9 * * 1', 7 * 1440],
    // 1 February to 1 March in a common year.
    ['0 0 1 * *', 28 * 1440],
    // 31 July to 31 August.
    ['0 0 31 * *', 31 * 1440],
    ['0 0 29 2 *', 1461 * 1440],
    // The 13th or a Friday: Friday 12th to the 13th.
    ['0 0 13 * 5', 1440],
  ])('%s: %d minutes', (expression, minutes) => {
    expect(shortestGapMinutes(cron(expression))).toBe(minutes);
  });

  it('is everyMinutes for an interval and Infinity for a one-off', () => {
    expect(shortestGapMinutes({ kind: 'interval', everyMinutes: 20, anchor: new Date(0) })).toBe(
      20,
    );
    expect(shortestGapMinutes({ kind: 'once', at: new Date() })).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('maxRunsPerDay', () => {
  it.each([
    ['*/5 * * * *', 288],
    ['0 9 * * 1-5', 1],
    ['0,30 8-17 * * *', 20],
    ['0 0 29 2 *', 1],
  ])('%s: %d', (expression, runs) => {
    expect(maxRunsPerDay(cron(expression))).toBe(runs);
  });

  it('counts an interval over any 24 hours, and a one-off once', () => {
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 60, anchor: new Date(0) })).toBe(24);
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 7, anchor: new Date(0) })).toBe(206);
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 2000, anchor: new Date(0) })).toBe(1);
    expect(maxRunsPerDay({ kind: 'once', at: new Date() })).toBe(1);
  });
});
