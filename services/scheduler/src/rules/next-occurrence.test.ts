import { Temporal } from 'temporal-polyfill';
import { describe, expect, it } from 'vitest';
import { nextCronOccurrence } from './next-occurrence';

// Checks the fast search against brute force around real transitions, for both semantics of
// issue 24, every matching wall time of a few days resolved one by one with Temporal:
// - wall clock (rules with set hours): each by 'compatible', duplicates dropped;
// - elapsed time (the hour field starts with '*'): each instant whose reading in the zone is that
//   wall time, which a fall-back gives twice and a spring-forward gap not at all.

const DAY = 86_400_000;

type DenseRule = {
  cron: string;
  follows: 'wall' | 'elapsed';
  minutes: number[];
  hours: number[];
  // Sunday 0; every day when absent.
  daysOfWeek?: number[];
};

const range = (from: number, to: number, step = 1) =>
  Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

const RULES: DenseRule[] = [
  { cron: '*/7 * * * *', follows: 'elapsed', minutes: range(0, 59, 7), hours: range(0, 23) },
  { cron: '15,45 * * * *', follows: 'elapsed', minutes: [15, 45], hours: range(0, 23) },
  { cron: '0 */2 * * *', follows: 'elapsed', minutes: [0], hours: range(0, 22, 2) },
  { cron: '30 */3 * * *', follows: 'elapsed', minutes: [30], hours: range(0, 21, 3) },
  // Transitions fall on Sundays in most zones here, and at midnight in some.
  {
    cron: '10,50 * * * 0',
    follows: 'elapsed',
    minutes: [10, 50],
    hours: range(0, 23),
    daysOfWeek: [0],
  },
  { cron: '20,40 2 * * *', follows: 'wall', minutes: [20, 40], hours: [2] },
  { cron: '* 2 * * *', follows: 'wall', minutes: range(0, 59), hours: [2] },
  { cron: '0,30 0-3 * * *', follows: 'wall', minutes: [0, 30], hours: range(0, 3) },
  { cron: '30 0 * * *', follows: 'wall', minutes: [30], hours: [0] },
  { cron: '59 23 * * *', follows: 'wall', minutes: [59], hours: [23] },
];

// Zones with unusual transitions: at midnight (Santiago, Havana), 30 minutes (Lord_Howe),
// 2 hours (Troll), at 45 minutes past (Chatham), Ramadan pauses (Casablanca), and Samoa's
// skipped 30 December 2011.
const ZONES: { zone: string; from: string; to: string }[] = [
  { zone: 'Europe/Oslo', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'America/New_York', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'Australia/Lord_Howe', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'America/Santiago', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'America/Havana', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'Antarctica/Troll', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'Pacific/Chatham', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'Africa/Casablanca', from: '2026-01-01', to: '2027-01-01' },
  { zone: 'Pacific/Apia', from: '2011-06-01', to: '2012-01-01' },
];

function transitions(zone: string, from: string, to: string): number[] {
  const end = Date.parse(to);
  const found: number[] = [];
  let next = Temporal.Instant.from(`${from}T00:00:00Z`)
    .toZonedDateTimeISO(zone)
    .getTimeZoneTransition('next');
  while (next && next.epochMilliseconds < end) {
    found.push(next.epochMilliseconds);
    next = next.getTimeZoneTransition('next');
  }
  return found;
}

function bruteForce(rule: DenseRule, zone: string, from: number, to: number): number[] {
  const instants = new Set<number>();
  let date = Temporal.Instant.fromEpochMilliseconds(from - 2 * DAY)
    .toZonedDateTimeISO(zone)
    .toPlainDate();
  const lastDate = Temporal.Instant.fromEpochMilliseconds(to + 2 * DAY)
    .toZonedDateTimeISO(zone)
    .toPlainDate();
  for (; Temporal.PlainDate.compare(date, lastDate) <= 0; date = date.add({ days: 1 })) {
    if (rule.daysOfWeek && !rule.daysOfWeek.includes(date.dayOfWeek % 7)) continue;
    for (const hour of rule.hours) {
      for (const minute of rule.minutes) {
        for (const instant of instantsOf(date.toPlainDateTime({ hour, minute }), zone, rule)) {
          if (instant > from && instant <= to) instants.add(instant);
        }
      }
    }
  }
  return [...instants].sort((a, b) => a - b);
}

function instantsOf(wall: Temporal.PlainDateTime, zone: string, rule: DenseRule): number[] {
  if (rule.follows === 'wall') {
    return [wall.toZonedDateTime(zone, { disambiguation: 'compatible' }).epochMilliseconds];
  }
  // 'earlier' and 'later' are the two instants of a repeated wall time; for one in a gap they are
  // shifted instants whose reading is another wall time, and are dropped.
  return (['earlier', 'later'] as const)
    .map((disambiguation) => wall.toZonedDateTime(zone, { disambiguation }))
    .filter((zoned) => zoned.toPlainDateTime().equals(wall))
    .map((zoned) => zoned.epochMilliseconds);
}

function chain(rule: DenseRule, zone: string, from: number, to: number): number[] {
  const fired: number[] = [];
  let after = from;
  for (;;) {
    const next = nextCronOccurrence(rule.cron, zone, after);
    if (next === undefined || next > to) return fired;
    fired.push(next);
    after = next;
  }
}

describe('nextCronOccurrence against brute force around every transition', () => {
  const cases = ZONES.flatMap(({ zone, from, to }) =>
    transitions(zone, from, to).map(
      (transition) => [zone, new Date(transition).toISOString(), transition] as const,
    ),
  );

  it('covers transitions in every zone', () => {
    for (const { zone } of ZONES) expect(cases.some(([name]) => name === zone)).toBe(true);
  });

  it.each(cases)('%s, transition at %s', (zone, _label, transition) => {
    const from = transition - 1.5 * DAY;
    const to = transition + 3 * DAY;
    for (const rule of RULES) {
      const expected = bruteForce(rule, zone, from, to);
      expect({ rule: rule.cron, fired: chain(rule, zone, from, to) }).toEqual({
        rule: rule.cron,
        fired: expected,
      });
      // From arbitrary points too, in shuffled order, so a cached zone segment from one call
      // cannot mislead the next.
      for (let i = 0; i < 25; i++) {
        const after = from + Math.floor(Math.random() * (to - from - DAY));
        const next = expected.find((instant) => instant > after);
        if (next === undefined) continue;
        expect({
          rule: rule.cron,
          after,
          next: nextCronOccurrence(rule.cron, zone, after),
        }).toEqual({
          rule: rule.cron,
          after,
          next,
        });
      }
    }
  });
});
