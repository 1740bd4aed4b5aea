import { describe, expect, it } from 'vitest';
import { formatInZone, timeZoneChoices, toWallTimeInput, wallTimeToInstant } from './time-zones';

const at = (local: string, timeZone: string) => wallTimeToInstant(local, timeZone)?.toISOString();

describe('wallTimeToInstant', () => {
  it('reads a wall time on the zone clock, not the machine clock', () => {
    expect(at('2030-01-15T09:00', 'Asia/Kolkata')).toBe('2030-01-15T03:30:00.000Z');
    expect(at('2030-07-15T09:00', 'America/New_York')).toBe('2030-07-15T13:00:00.000Z');
    expect(at('2030-01-15T09:00', 'UTC')).toBe('2030-01-15T09:00:00.000Z');
    expect(at('2030-01-15T09:00:30', 'Europe/Oslo')).toBe('2030-01-15T08:00:30.000Z');
  });

  it('moves a time in a spring-forward gap forward by the gap, as Temporal compatible does', () => {
    // Oslo jumps from 02:00 to 03:00 on 29 March 2026: 02:30 is 03:30 CEST.
    expect(at('2026-03-29T02:30', 'Europe/Oslo')).toBe('2026-03-29T01:30:00.000Z');
    // Lord Howe jumps half an hour, 02:00 to 02:30, on 4 October 2026: 02:15 is 02:45.
    expect(at('2026-10-04T02:15', 'Australia/Lord_Howe')).toBe('2026-10-03T15:45:00.000Z');
    expect(at('2026-03-08T02:30', 'America/New_York')).toBe('2026-03-08T07:30:00.000Z');
  });

  it('takes the first of a wall time that occurs twice', () => {
    // Oslo falls back from 03:00 to 02:00 on 25 October 2026: 02:30 CEST comes first.
    expect(at('2026-10-25T02:30', 'Europe/Oslo')).toBe('2026-10-25T00:30:00.000Z');
    expect(at('2026-11-01T01:30', 'America/New_York')).toBe('2026-11-01T05:30:00.000Z');
    // Lord Howe falls back half an hour, 02:00 to 01:30, on 5 April 2026.
    expect(at('2026-04-05T01:45', 'Australia/Lord_Howe')).toBe('2026-04-04T14:45:00.000Z');
  });

  it('refuses what is not a wall time', () => {
    expect(wallTimeToInstant('', 'UTC')).toBeUndefined();
    expect(wallTimeToInstant('tomorrow at 9', 'UTC')).toBeUndefined();
  });

  it('round-trips with toWallTimeInput', () => {
    const instant = new Date('2030-01-15T03:30:00Z');
    expect(toWallTimeInput(instant, 'Asia/Kolkata')).toBe('2030-01-15T09:00');
    expect(wallTimeToInstant(toWallTimeInput(instant, 'Asia/Kolkata'), 'Asia/Kolkata')).toEqual(
      instant,
    );
  });
});

describe('formatInZone', () => {
  it('tells the time on the given zone clock and names the zone', () => {
    const text = formatInZone('2030-01-15T03:30:00Z', 'Asia/Kolkata', 'en-GB');
    expect(text).toContain('15 Jan 2030');
    expect(text).toContain('09:00');
    expect(text).toMatch(/GMT\+5:30|IST/);
    expect(formatInZone(null, 'UTC')).toBe('—');
  });
});

describe('timeZoneChoices', () => {
  it('lists the known zones sorted, with UTC and the stored zone kept', () => {
    const choices = timeZoneChoices(['Asia/Calcutta']);
    expect(choices).toContain('Europe/Oslo');
    expect(choices).toContain('UTC');
    expect(choices).toContain('Asia/Calcutta');
    expect(choices).toEqual([...choices].sort((a, b) => a.localeCompare(b)));
    expect(new Set(choices).size).toBe(choices.length);
  });
});
