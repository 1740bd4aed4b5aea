import { describe, expect, it } from 'vitest';
import { IsoWeek, isoWeekBounds, isoWeekOf } from './memory-episodes-rollup';

describe('ISO weeks', () => {
  it('spans Monday to Monday in UTC', () => {
    expect(isoWeekBounds('2026-W48')).toEqual({
      start: new Date('2026-11-23T00:00:00Z'),
      end: new Date('2026-11-30T00:00:00Z'),
    });
    // Week 1 holds 4 January, so it may start in December.
    expect(isoWeekBounds('2026-W01')?.start).toEqual(new Date('2025-12-29T00:00:00Z'));
  });

  it('names the week of an instant after the year of its Thursday', () => {
    expect(isoWeekOf(new Date('2025-12-29T00:00:00Z'))).toBe('2026-W01');
    expect(isoWeekOf(new Date('2021-01-03T23:59:59.999Z'))).toBe('2020-W53');
    expect(isoWeekOf(new Date('2026-11-29T23:59:59.999Z'))).toBe('2026-W48');
    expect(isoWeekOf(new Date('2026-11-30T00:00:00Z'))).toBe('2026-W49');
  });

  it('knows which years have a week 53', () => {
    expect(isoWeekBounds('2020-W53')).toBeDefined();
    expect(isoWeekBounds('2026-W53')).toBeDefined();
    expect(isoWeekBounds('2021-W53')).toBeUndefined();
    expect(isoWeekBounds('2025-W53')).toBeUndefined();
  });

  it('reads years before 100 as they are, not as 19xx', () => {
    const bounds = isoWeekBounds('0099-W10');
    expect(bounds?.start.getUTCFullYear()).toBe(99);
    expect(bounds && isoWeekOf(bounds.start)).toBe('0099-W10');
  });

  it('refuses what names no week', () => {
    for (const week of ['2025-W00', '2025-W54', '2025-W1', '2025-10', '0000-W01', ' 2025-W10']) {
      expect(IsoWeek.safeParse(week).success, week).toBe(false);
    }
    expect(IsoWeek.safeParse('2025-W10').success).toBe(true);
  });
});
