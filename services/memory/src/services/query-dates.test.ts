import { describe, expect, it } from 'vitest';
import { parseDateRange, parseValidUntil } from './query-dates';

// A Saturday afternoon.
const NOW = new Date('2026-11-21T15:00:00Z');

function range(from: string, to: string) {
  return { from: new Date(from), to: new Date(to) };
}

describe('parseDateRange', () => {
  it.each([
    ['what did I eat today', '2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z'],
    ['what did I say yesterday?', '2026-11-20T00:00:00Z', '2026-11-21T00:00:00Z'],
    ['plans for this week', '2026-11-16T00:00:00Z', '2026-11-23T00:00:00Z'],
    ['what happened last week', '2026-11-09T00:00:00Z', '2026-11-16T00:00:00Z'],
    ['anything in the past week', '2026-11-14T00:00:00Z', '2026-11-21T15:00:00Z'],
    ['my runs this month', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z'],
    ['books I read last month', '2026-10-01T00:00:00Z', '2026-11-01T00:00:00Z'],
    ['over the past month', '2026-10-22T00:00:00Z', '2026-11-21T15:00:00Z'],
    ['trips this year', '2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z'],
    ['trips last year', '2025-01-01T00:00:00Z', '2026-01-01T00:00:00Z'],
    ['during the past year', '2025-11-21T00:00:00Z', '2026-11-21T15:00:00Z'],
    ['what did I say in March 2023', '2023-03-01T00:00:00Z', '2023-04-01T00:00:00Z'],
    ['what did I say in December 2023', '2023-12-01T00:00:00Z', '2024-01-01T00:00:00Z'],
    ['where did I go during July', '2026-07-01T00:00:00Z', '2026-08-01T00:00:00Z'],
  ])('reads %j', (query, from, to) => {
    expect(parseDateRange(query, NOW)).toEqual(range(from, to));
  });

  it('ignores case', () => {
    expect(parseDateRange('What did I say LAST WEEK?', NOW)).toEqual(
      range('2026-11-09T00:00:00Z', '2026-11-16T00:00:00Z'),
    );
    expect(parseDateRange('In MARCH 2023', NOW)).toEqual(
      range('2023-03-01T00:00:00Z', '2023-04-01T00:00:00Z'),
    );
    expect(parseDateRange('Today', NOW)).toEqual(
      range('2026-11-21T00:00:00Z', '2026-11-22T00:00:00Z'),
    );
  });

  it('starts weeks on Monday, also when today is a Sunday or a Monday', () => {
    const sunday = new Date('2026-11-22T23:30:00Z');
    const monday = new Date('2026-11-23T00:10:00Z');

    expect(parseDateRange('this week', sunday)).toEqual(
      range('2026-11-16T00:00:00Z', '2026-11-23T00:00:00Z'),
    );
    expect(parseDateRange('this week', monday)).toEqual(
      range('2026-11-23T00:00:00Z', '2026-11-30T00:00:00Z'),
    );
    expect(parseDateRange('last week', monday)).toEqual(
      range('2026-11-16T00:00:00Z', '2026-11-23T00:00:00Z'),
    );
  });

  it('takes last month in January to be December of the year before', () => {
    const january = new Date('2027-01-10T08:00:00Z');

    expect(parseDateRange('last month', january)).toEqual(
      range('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'),
    );
  });

  it('ends this month in December at the new year', () => {
    const december = new Date('2026-12-31T23:00:00Z');

    expect(parseDateRange('this month', december)).toEqual(
      range('2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'),
    );
  });

  describe('a month without a year', () => {
    it('is this year when that month has begun', () => {
      expect(parseDateRange('in March', NOW)).toEqual(
        range('2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z'),
      );
      // The current month has begun too.
      expect(parseDateRange('in November', NOW)).toEqual(
        range('2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z'),
      );
    });

    it('is last year when that month is still to come', () => {
      const february = new Date('2026-02-10T12:00:00Z');

      expect(parseDateRange('in March', february)).toEqual(
        range('2025-03-01T00:00:00Z', '2025-04-01T00:00:00Z'),
      );
      expect(parseDateRange('in December', NOW)).toEqual(
        range('2025-12-01T00:00:00Z', '2026-01-01T00:00:00Z'),
      );
    });
  });

  it.each([
    ['a bare year', 'what happened in 2022'],
    ['a plain question', "what is my dog's name?"],
    ['a month name inside another word', 'we stayed in Mayfair'],
    ['a month name not introduced by in or during', 'march to the beat'],
    ['a unit glued to another word', 'what about this weekend'],
    ['an empty query', ''],
  ])('finds no range in %s', (_label, query) => {
    expect(parseDateRange(query, NOW)).toBeUndefined();
  });
});

describe('parseValidUntil', () => {
  // NOW is Saturday 21 November 2026, 16:00 in Oslo (UTC+1) and 10:00 in New York (UTC-5).
  it.each([
    ['The user is in Berlin until Friday.', 'Europe/Oslo', '2026-11-27T23:00:00Z'],
    ['The user is in Berlin until Friday.', 'America/New_York', '2026-11-28T05:00:00Z'],
    ['The user works from home until next Tuesday', 'UTC', '2026-11-25T00:00:00Z'],
    ['The office is closed till Saturday', 'UTC', '2026-11-22T00:00:00Z'],
    ['The user is off work until tomorrow', 'Europe/Oslo', '2026-11-22T23:00:00Z'],
    ['The user is working late today', 'Europe/Oslo', '2026-11-21T23:00:00Z'],
    ['The parking permit is valid only today', 'Europe/Oslo', '2026-11-21T23:00:00Z'],
    ['The user works from the cabin until the end of the month', 'UTC', '2026-12-01T00:00:00Z'],
    ['The user is at the Hilton tonight', 'Europe/Oslo', '2026-11-22T05:00:00Z'],
    ['The user is on call this week', 'Europe/Oslo', '2026-11-22T23:00:00Z'],
    ['The user is on a diet for the rest of the month', 'Europe/Oslo', '2026-11-30T23:00:00Z'],
    ['The user has a guest for the next 3 days', 'UTC', '2026-11-24T15:00:00Z'],
    ['The user is travelling for two weeks', 'UTC', '2026-12-05T15:00:00Z'],
  ])('%j in %s holds until %s', (text, timeZone, until) => {
    expect(parseValidUntil(text, NOW, timeZone)).toEqual(new Date(until));
  });

  it('crosses a change of daylight saving time at local midnight', () => {
    // Saturday 28 March 2026 in Oslo: clocks go forward early on Sunday the 29th.
    const saturday = new Date('2026-03-28T12:00:00Z');
    expect(parseValidUntil('until Monday', saturday, 'Europe/Oslo')).toEqual(
      new Date('2026-03-30T22:00:00Z'),
    );
  });

  it.each([
    'The user lives in Porto.',
    'The user was in Berlin last week.',
    'The user prefers tea to coffee',
    'The user started a new job today.',
    'The user moved to Porto this week',
  ])('%j holds with no end', (text) => {
    expect(parseValidUntil(text, NOW, 'Europe/Oslo')).toBeUndefined();
  });
});
