import { Temporal } from 'temporal-polyfill';
import { describe, expect, it } from 'vitest';
import { nextCronOccurrence } from './next-occurrence';

// Checks the fast search against brute force around real transitions: every matching wall time
// of a few days resolved one by one with Temporal's 'compatible', duplicates dropped, sorted.

const DAY = 86_400_000;

type DenseRule = { cron: string; minutes: number[]; hours: number[] };

const range = (from: number, to: number, step = 1) =>
  Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

const RULES: DenseRule[] = [
  { cron: '*/7 * * * *', minutes: range(0, 59, 7), hours: range(0, 23) },
  { cron: '15,45 * * * *', minutes: [15, 45], hours: range(0, 23) },
  { cron: '20,40 2 * * *', minutes: [20, 40], hours: [2] },
  { cron: '* 2 * * *', minutes: range(0, 59), hours: [2] },
  { cron: '0,30 0-3 * * *', minutes: [0, 30], hours: range(0, 3) },
  { cron: '30 0 * * *', minutes: [30], hours: [0] },
  { cron: '59 23 * * *', minutes: [59], hours: [23] },
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
  while (Temporal.PlainDate.compare(date, lastDate) <= 0) {
    for (const hour of rule.hours) {
      for (const minute of rule.minutes) {
        const instant = date
          .toPlainDateTime({ hour, minute })
          .toZonedDateTime(zone, { disambiguation: 'compatible' }).epochMilliseconds;
        if (instant > from && instant <= to) instants.add(instant);
      }
    }
    date = date.add({ days: 1 });
  }
  return [...instants].sort((a, b) => a - b);
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
