import { Temporal } from 'temporal-polyfill';
import { describe, expect, it } from 'vitest';
import { nextOccurrence, type Rule } from './rule';
import { maxRunsPerDay, shortestGapMinutes } from './rule-limits';

const cron = (expression: string, timeZone = 'Europe/Oslo'): Rule => ({
  kind: 'cron',
  cron: expression,
  timeZone,
});

const HOUR = 3_600_000;

describe('shortestGapMinutes', () => {
  it.each([
    ['*/5 * * * *', 5],
    ['0,10,45 * * * *', 10],
    ['50 * * * *', 60],
    // Nominal: at Oslo's fall-back it fires at both 02:00s, an hour apart.
    ['0 */2 * * *', 120],
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
    // Elapsed time: a day's times, and those of the hour a fall-back repeats.
    ['*/5 * * * *', 'Europe/Oslo', 288 + 12],
    ['0 * * * *', 'Europe/Oslo', 25],
    ['0 */2 * * *', 'Europe/Oslo', 13],
    ['0 * * * *', 'Antarctica/Troll', 26],
    ['0,30 * * * *', 'Australia/Lord_Howe', 49],
    ['0 * * * *', 'Asia/Kolkata', 24],
    ['0 * * * *', '+05:30', 24],
    ['0 * * * *', 'UTC', 24],
    // Wall clock: each time of day once.
    ['30 2 * * *', 'Europe/Oslo', 1],
    ['0 9 * * 1-5', 'Europe/Oslo', 1],
    ['0,30 8-17 * * *', 'Europe/Oslo', 20],
    ['0 0 29 2 *', 'Europe/Oslo', 1],
  ])('%s in %s: %d', (expression, zone, runs) => {
    expect(maxRunsPerDay(cron(expression, zone))).toBe(runs);
  });

  // Every occurrence of 2026, counted per calendar day of the zone and, for elapsed-time rules,
  // per sliding 24 real hours (a wall-clock rule is bounded per wall-clock day only).
  it.each([
    ['0 * * * *', 'Europe/Oslo', 25, 'elapsed'],
    ['15,45 * * * *', 'America/New_York', 50, 'elapsed'],
    ['0 */2 * * *', 'Europe/Oslo', 13, 'elapsed'],
    ['0 * * * *', 'Antarctica/Troll', 26, 'elapsed'],
    ['45 * * * *', 'Australia/Lord_Howe', 25, 'elapsed'],
    ['30 * * * *', 'Asia/Kolkata', 24, 'elapsed'],
    ['30 2 * * *', 'Europe/Oslo', 1, 'wall'],
    ['0,30 1-2 * * *', 'America/New_York', 4, 'wall'],
  ])('bounds %s in %s over 2026, reaching %d on its busiest day', (expression, zone, busiest, follows) => {
    const rule = cron(expression, zone);
    const bound = maxRunsPerDay(rule);
    const fired: number[] = [];
    const end = Date.parse('2027-01-01T00:00:00Z');
    for (let next = nextOccurrence(rule, new Date('2026-01-01T00:00:00Z')); next; ) {
      if (next.getTime() >= end) break;
      fired.push(next.getTime());
      next = nextOccurrence(rule, next);
    }
    const perDay = new Map<string, number>();
    for (const instant of fired) {
      const day = Temporal.Instant.fromEpochMilliseconds(instant)
        .toZonedDateTimeISO(zone)
        .toPlainDate()
        .toString();
      perDay.set(day, (perDay.get(day) ?? 0) + 1);
    }
    expect(Math.max(...perDay.values())).toBe(busiest);
    expect(busiest).toBeLessThanOrEqual(bound);
    if (follows === 'wall') return;
    let start = 0;
    for (let i = 0; i < fired.length; i++) {
      while ((fired[i] ?? 0) - (fired[start] ?? 0) >= 24 * HOUR) start += 1;
      expect(i - start + 1).toBeLessThanOrEqual(bound);
    }
  });

  it('counts an interval over any 24 hours, and a one-off once', () => {
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 60, anchor: new Date(0) })).toBe(24);
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 7, anchor: new Date(0) })).toBe(206);
    expect(maxRunsPerDay({ kind: 'interval', everyMinutes: 2000, anchor: new Date(0) })).toBe(1);
    expect(maxRunsPerDay({ kind: 'once', at: new Date() })).toBe(1);
  });
});
