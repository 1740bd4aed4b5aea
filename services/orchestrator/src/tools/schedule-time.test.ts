import { describe, expect, it } from 'vitest';
import { resolveTime } from './schedule-time';

function resolved(text: string, now: string, timeZone: string): string {
  const result = resolveTime(text, new Date(now), timeZone);
  if ('problem' in result) throw new Error(result.problem);
  return result.at.toISOString();
}

function problem(text: string, now: string, timeZone: string): string {
  const result = resolveTime(text, new Date(now), timeZone);
  return 'problem' in result ? result.problem : `resolved to ${result.at.toISOString()}`;
}

describe('resolveTime', () => {
  it('takes an ISO 8601 instant with its offset as it is', () => {
    expect(resolved('2026-12-03T09:00:00+01:00', '2026-11-28T12:00:00Z', 'America/New_York')).toBe(
      '2026-12-03T08:00:00.000Z',
    );
    expect(resolved('2026-12-03T08:00Z', '2026-11-28T12:00:00Z', 'Europe/Oslo')).toBe(
      '2026-12-03T08:00:00.000Z',
    );
  });

  it('reads a time without an offset on the wall clock of the user', () => {
    expect(resolved('2026-12-03T09:00', '2026-11-28T12:00:00Z', 'Europe/Oslo')).toBe(
      '2026-12-03T08:00:00.000Z',
    );
  });

  it('counts "in 20 minutes" as elapsed time, across a DST change too', () => {
    expect(resolved('in 20 minutes', '2026-11-28T12:00:00Z', 'Europe/Oslo')).toBe(
      '2026-11-28T12:20:00.000Z',
    );
    expect(resolved('in 2 seconds', '2026-11-28T12:00:00Z', 'UTC')).toBe(
      '2026-11-28T12:00:02.000Z',
    );
    // 02:50 CEST in Oslo, ten minutes before the clocks go back from 03:00 to 02:00.
    expect(resolved('in 20 minutes', '2026-10-25T00:50:00Z', 'Europe/Oslo')).toBe(
      '2026-10-25T01:10:00.000Z',
    );
  });

  it('places "tomorrow at 9" with the offset of that day, not of today', () => {
    // Saturday 28 March 2026 in Oslo is CET (+01:00); Sunday 29 March is CEST (+02:00).
    expect(resolved('tomorrow at 9', '2026-03-28T10:15:00Z', 'Europe/Oslo')).toBe(
      '2026-03-29T07:00:00.000Z',
    );
    // New York leaves DST on Sunday 1 November 2026 (-04:00 to -05:00).
    expect(resolved('tomorrow at 9', '2026-10-31T14:00:00Z', 'America/New_York')).toBe(
      '2026-11-01T14:00:00.000Z',
    );
  });

  it("takes today and tomorrow from the user's calendar, not UTC's", () => {
    // 22:00 on 1 December in New York is already 2 December in UTC.
    expect(resolved('tomorrow at 9', '2026-12-02T03:00:00Z', 'America/New_York')).toBe(
      '2026-12-02T14:00:00.000Z',
    );
    // Kolkata is +05:30 all year: 01:00 there on 3 December is still 2 December in UTC.
    expect(resolved('tomorrow at 9', '2026-12-02T19:30:00Z', 'Asia/Kolkata')).toBe(
      '2026-12-04T03:30:00.000Z',
    );
  });

  it('moves a wall time the spring-forward skips on by the gap, and takes the first of a repeated one', () => {
    // 02:30 does not exist in Oslo on 29 March 2026: 03:30 CEST.
    expect(resolved('tomorrow at 2:30am', '2026-03-28T12:00:00Z', 'Europe/Oslo')).toBe(
      '2026-03-29T01:30:00.000Z',
    );
    // 02:30 happens twice in Oslo on 25 October 2026: the first, still CEST.
    expect(resolved('tomorrow at 2:30am', '2026-10-24T12:00:00Z', 'Europe/Oslo')).toBe(
      '2026-10-25T00:30:00.000Z',
    );
    // Lord Howe Island moves its clocks by 30 minutes, on 5 April 2026 back from +11:00 to
    // +10:30 at 02:00, so 01:45 happens twice.
    expect(resolved('tomorrow at 1:45am', '2026-04-04T01:00:00Z', 'Australia/Lord_Howe')).toBe(
      '2026-04-04T14:45:00.000Z',
    );
  });

  it('reads "at 9" after nine as tomorrow, and weekdays as the coming ones', () => {
    // 10:00 in Oslo on Saturday 28 November 2026.
    expect(resolved('at 9', '2026-11-28T09:00:00Z', 'Europe/Oslo')).toBe(
      '2026-11-29T08:00:00.000Z',
    );
    expect(resolved('next Friday at 17:00', '2026-11-28T09:00:00Z', 'Europe/Oslo')).toBe(
      '2026-12-04T16:00:00.000Z',
    );
  });

  it('keeps a zone the phrase names', () => {
    expect(resolved('tomorrow at 9am EST', '2026-11-28T09:00:00Z', 'Europe/Oslo')).toBe(
      '2026-11-29T14:00:00.000Z',
    );
  });

  it('says what it cannot read, and refuses a time in the past', () => {
    expect(problem('whenever suits', '2026-11-28T09:00:00Z', 'Europe/Oslo')).toMatch(
      /^at: cannot read "whenever suits" as a time; give an ISO 8601 instant/,
    );
    expect(problem('2026-11-28T09:00:00Z', '2026-11-28T09:00:00Z', 'Europe/Oslo')).toBe(
      'at: 2026-11-28T10:00:00+01:00 is in the past (it is now 2026-11-28T10:00:00+01:00 in Europe/Oslo)',
    );
    expect(problem('2020-01-01T00:00:00+01:00', '2026-11-28T09:00:00Z', 'UTC')).toMatch(
      /^at: 2019-12-31T23:00:00\+00:00 is in the past/,
    );
  });
});
