import { describe, expect, it } from 'vitest';
import { quietHoursEnd } from './quiet-hours';

const NIGHT = { start: '22:00', end: '07:00' };

describe('quietHoursEnd', () => {
  it('ends quiet hours that span midnight at the next end, in the zone', () => {
    // 23:30 in Paris (UTC+1 in winter).
    const now = new Date('2026-01-10T22:30:00Z');
    expect(quietHoursEnd(now, NIGHT, 'Europe/Paris')?.toISOString()).toBe(
      '2026-01-11T06:00:00.000Z',
    );
    // 05:15 the next morning: the same end.
    expect(
      quietHoursEnd(new Date('2026-01-11T04:15:42Z'), NIGHT, 'Europe/Paris')?.toISOString(),
    ).toBe('2026-01-11T06:00:00.000Z');
  });

  it('is undefined outside quiet hours, and at their end', () => {
    expect(quietHoursEnd(new Date('2026-01-10T12:00:00Z'), NIGHT, 'Europe/Paris')).toBeUndefined();
    expect(quietHoursEnd(new Date('2026-01-11T06:00:00Z'), NIGHT, 'Europe/Paris')).toBeUndefined();
    // 21:59 local.
    expect(quietHoursEnd(new Date('2026-01-10T20:59:00Z'), NIGHT, 'Europe/Paris')).toBeUndefined();
  });

  it('handles quiet hours within one day', () => {
    const lunch = { start: '12:00', end: '13:30' };
    expect(
      quietHoursEnd(new Date('2026-06-01T16:10:00Z'), lunch, 'America/New_York')?.toISOString(),
    ).toBe('2026-06-01T17:30:00.000Z');
    expect(
      quietHoursEnd(new Date('2026-06-01T18:00:00Z'), lunch, 'America/New_York'),
    ).toBeUndefined();
  });

  it('lands on the end wall time across a clock change', () => {
    // Paris moves to summer time at 02:00 on 29 March 2026: 23:00 (UTC+1) to 07:00 (UTC+2) is
    // seven hours, not eight.
    const now = new Date('2026-03-28T22:00:00Z');
    expect(quietHoursEnd(now, NIGHT, 'Europe/Paris')?.toISOString()).toBe(
      '2026-03-29T05:00:00.000Z',
    );
    // And back in October: 25 hours in the day, 02:00 comes twice.
    expect(
      quietHoursEnd(new Date('2026-10-24T21:00:00Z'), NIGHT, 'Europe/Paris')?.toISOString(),
    ).toBe('2026-10-25T06:00:00.000Z');
  });

  it('treats a start equal to the end as no quiet hours', () => {
    expect(
      quietHoursEnd(new Date('2026-01-10T22:30:00Z'), { start: '08:00', end: '08:00' }, 'UTC'),
    ).toBeUndefined();
  });
});
