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
