import { describe, expect, it } from 'vitest';
import { describeInstant } from './describe-instant';

const NOW = new Date('2026-06-01T12:00:00Z');

describe('describeInstant', () => {
  it('states the wall clock and the city of the zone', () => {
    // Thursday 3 December 2026, 09:00 in Oslo (+01:00).
    expect(describeInstant(new Date('2026-12-03T08:00:00Z'), 'Europe/Oslo', NOW)).toBe(
      'Thursday 3 December, 09:00 Oslo time',
    );
    expect(describeInstant(new Date('2026-07-04T16:05:00Z'), 'America/New_York', NOW)).toBe(
      'Saturday 4 July, 12:05 New York time',
    );
    expect(
      describeInstant(new Date('2026-06-01T03:00:00Z'), 'America/Argentina/Buenos_Aires', NOW),
    ).toBe('Monday 1 June, 00:00 Buenos Aires time');
  });

  it('says UTC for UTC, and the offset for zones without a place', () => {
    expect(describeInstant(new Date('2026-06-02T07:30:00Z'), 'UTC', NOW)).toBe(
      'Tuesday 2 June, 07:30 UTC',
    );
    expect(describeInstant(new Date('2026-06-02T07:30:00Z'), 'Etc/GMT+5', NOW)).toBe(
      'Tuesday 2 June, 02:30 UTC-05:00',
    );
  });

  it('adds the year when it is not the current one in that zone', () => {
    expect(describeInstant(new Date('2027-01-05T08:00:00Z'), 'Europe/Oslo', NOW)).toBe(
      'Tuesday 5 January 2027, 09:00 Oslo time',
    );
    // 31 December 2026 23:30 UTC is already 2027 in Oslo.
    expect(
      describeInstant(
        new Date('2026-12-31T23:30:00Z'),
        'Europe/Oslo',
        new Date('2027-01-01T00:30:00Z'),
      ),
    ).toBe('Friday 1 January, 00:30 Oslo time');
  });

  it('reads the current year from the clock when no now is given', () => {
    const soon = new Date(Date.now() + 60_000);
    expect(describeInstant(soon, 'UTC')).not.toMatch(/\d{4},/);
  });
});
