import { describe, expect, it } from 'vitest';
import { nextOccurrence, type Rule } from './rule';

function occurrences(rule: Rule, from: string, count: number): string[] {
  const times: string[] = [];
  let after = new Date(from);
  for (let i = 0; i < count; i++) {
    const next = nextOccurrence(rule, after);
    if (!next) break;
    times.push(next.toISOString());
    after = next;
  }
  return times;
}

const utc = (cron: string): Rule => ({ kind: 'cron', cron, timeZone: 'UTC' });

describe('nextOccurrence: once and interval', () => {
  it('fires a one-off once, strictly after', () => {
    const at = new Date('2026-05-01T10:00:00Z');
    expect(nextOccurrence({ kind: 'once', at }, new Date('2026-05-01T09:59:59Z'))).toEqual(at);
    expect(nextOccurrence({ kind: 'once', at }, at)).toBeUndefined();
  });

  it('counts an interval from its anchor, the anchor included', () => {
    const rule: Rule = {
      kind: 'interval',
      everyMinutes: 90,
      anchor: new Date('2026-05-01T10:00:00Z'),
    };
    expect(occurrences(rule, '2026-05-01T09:00:00Z', 3)).toEqual([
      '2026-05-01T10:00:00.000Z',
      '2026-05-01T11:30:00.000Z',
      '2026-05-01T13:00:00.000Z',
    ]);
    expect(nextOccurrence(rule, new Date('2026-05-01T11:30:00Z'))?.toISOString()).toBe(
      '2026-05-01T13:00:00.000Z',
    );
  });
});

describe('nextOccurrence: cron semantics (UTC)', () => {
  it('steps, ranges and lists', () => {
    expect(occurrences(utc('*/20 9-10 * * *'), '2026-05-01T00:00:00Z', 7)).toEqual([
      '2026-05-01T09:00:00.000Z',
      '2026-05-01T09:20:00.000Z',
      '2026-05-01T09:40:00.000Z',
      '2026-05-01T10:00:00.000Z',
      '2026-05-01T10:20:00.000Z',
      '2026-05-01T10:40:00.000Z',
      '2026-05-02T09:00:00.000Z',
    ]);
  });

  it('is strictly after, also mid-minute', () => {
    expect(nextOccurrence(utc('* * * * *'), new Date('2026-05-01T10:00:00Z'))?.toISOString()).toBe(
      '2026-05-01T10:01:00.000Z',
    );
    expect(
      nextOccurrence(utc('* * * * *'), new Date('2026-05-01T10:00:30.500Z'))?.toISOString(),
    ).toBe('2026-05-01T10:01:00.000Z');
  });

  it('finds February 29 years ahead, and gives up on a rule that never matches', () => {
    expect(nextOccurrence(utc('0 0 29 2 *'), new Date('2028-03-01T00:00:00Z'))?.toISOString()).toBe(
      '2032-02-29T00:00:00.000Z',
    );
    expect(nextOccurrence(utc('0 0 29 2 *'), new Date('2096-03-01T00:00:00Z'))?.toISOString()).toBe(
      '2104-02-29T00:00:00.000Z',
    );
    expect(nextOccurrence(utc('0 0 31 4 *'), new Date('2026-01-01T00:00:00Z'))).toBeUndefined();
  });
});

describe('nextOccurrence: cron fields', () => {
  it('names of months and weekdays, in any case', () => {
    // 2026-01-01 is a Thursday.
    expect(occurrences(utc('0 8 * jan,MAR Mon-wed'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-05T08:00:00.000Z',
      '2026-01-06T08:00:00.000Z',
      '2026-01-07T08:00:00.000Z',
      '2026-01-12T08:00:00.000Z',
    ]);
    expect(nextOccurrence(utc('0 8 * jan,MAR Mon-wed'), new Date('2026-01-31T00:00:00Z'))).toEqual(
      new Date('2026-03-02T08:00:00Z'),
    );
  });

  it('Sunday is 0 and 7', () => {
    const sundays = ['2026-01-04T12:00:00.000Z', '2026-01-11T12:00:00.000Z'];
    expect(occurrences(utc('0 12 * * 0'), '2026-01-01T00:00:00Z', 2)).toEqual(sundays);
    expect(occurrences(utc('0 12 * * 7'), '2026-01-01T00:00:00Z', 2)).toEqual(sundays);
    expect(occurrences(utc('0 12 * * SUN'), '2026-01-01T00:00:00Z', 2)).toEqual(sundays);
    expect(occurrences(utc('0 12 * * 5-7'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-02T12:00:00.000Z',
      '2026-01-03T12:00:00.000Z',
      '2026-01-04T12:00:00.000Z',
      '2026-01-09T12:00:00.000Z',
    ]);
  });

  it('day of month and day of week both restricted: either one matches (Vixie cron)', () => {
    // The 13th, and every Friday: 2, 9, 13 (a Tuesday), 16 January 2026.
    expect(occurrences(utc('0 0 13 * FRI'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-02T00:00:00.000Z',
      '2026-01-09T00:00:00.000Z',
      '2026-01-13T00:00:00.000Z',
      '2026-01-16T00:00:00.000Z',
    ]);
  });

  it('a day field starting with * makes both apply (Vixie cron)', () => {
    // Odd days that are Mondays: 5 and 19 January, 9 February 2026.
    expect(occurrences(utc('0 0 */2 * 1'), '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-05T00:00:00.000Z',
      '2026-01-19T00:00:00.000Z',
      '2026-02-09T00:00:00.000Z',
    ]);
    // A starred day of week with a restricted day of month: the day of month alone.
    expect(occurrences(utc('0 0 1 * *'), '2026-01-15T00:00:00Z', 2)).toEqual([
      '2026-02-01T00:00:00.000Z',
      '2026-03-01T00:00:00.000Z',
    ]);
  });

  it('the 31st skips shorter months; the last minute of the year rolls over', () => {
    expect(occurrences(utc('0 0 31 * *'), '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-31T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
      '2026-07-31T00:00:00.000Z',
    ]);
    expect(occurrences(utc('59 23 31 12 *'), '2026-12-31T23:59:00Z', 1)).toEqual([
      '2027-12-31T23:59:00.000Z',
    ]);
    expect(occurrences(utc('0 0 1 1 *'), '2026-12-31T23:59:59Z', 1)).toEqual([
      '2027-01-01T00:00:00.000Z',
    ]);
  });

  it('the 30th of February never comes, the 29th only in leap years', () => {
    expect(occurrences(utc('0 0 29,30 2 *'), '2026-01-01T00:00:00Z', 3)).toEqual([
      '2028-02-29T00:00:00.000Z',
      '2032-02-29T00:00:00.000Z',
      '2036-02-29T00:00:00.000Z',
    ]);
    // 2100 is not a leap year.
    expect(nextOccurrence(utc('0 0 29 2 *'), new Date('2097-01-01T00:00:00Z'))).toEqual(
      new Date('2104-02-29T00:00:00Z'),
    );
    // February 29 on a Sunday, both days applying (day of week starts with *): 2032, then 2060.
    expect(occurrences(utc('0 0 29 2 */7'), '2030-01-01T00:00:00Z', 2)).toEqual([
      '2032-02-29T00:00:00.000Z',
      '2060-02-29T00:00:00.000Z',
    ]);
  });

  it('follows the wall clock of its zone, not UTC', () => {
    const rule: Rule = { kind: 'cron', cron: '0 9 * * 1-5', timeZone: 'Europe/Oslo' };
    // Friday 9 January 2026 at 09:00 in Oslo is 08:00Z; then Monday 12 January.
    expect(occurrences(rule, '2026-01-09T07:00:00Z', 2)).toEqual([
      '2026-01-09T08:00:00.000Z',
      '2026-01-12T08:00:00.000Z',
    ]);
    // In summer, 07:00Z.
    expect(occurrences(rule, '2026-07-01T00:00:00Z', 1)).toEqual(['2026-07-01T07:00:00.000Z']);
  });

  it('orders occurrences by instant where a shifted wall time overtakes the next (Lord Howe)', () => {
    // 4 October 2026: 02:00 -> 02:30. 02:20 does not exist and fires at 02:50, after 02:40.
    const rule: Rule = { kind: 'cron', cron: '20,40 2 * * *', timeZone: 'Australia/Lord_Howe' };
    expect(occurrences(rule, '2026-10-03T00:00:00Z', 4)).toEqual([
      '2026-10-03T15:40:00.000Z',
      '2026-10-03T15:50:00.000Z',
      '2026-10-04T15:20:00.000Z',
      '2026-10-04T15:40:00.000Z',
    ]);
  });

  it('throws on a rule checkCron refuses, and on an unknown zone', () => {
    expect(() => nextOccurrence(utc('61 * * * *'), new Date())).toThrow('minute 61');
    expect(() =>
      nextOccurrence({ kind: 'cron', cron: '* * * * *', timeZone: 'Mars/Olympus' }, new Date()),
    ).toThrow(RangeError);
  });
});
