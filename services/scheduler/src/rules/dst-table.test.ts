import { describe, expect, it } from 'vitest';
import { DST_CASES, formatOccurrence, ruleLabel } from './dst-cases';
import { nextOccurrence, type Rule } from './rule';

function occurrences(rule: Rule, from: string, count: number): Date[] {
  const times: Date[] = [];
  let after = new Date(from);
  for (let i = 0; i < count; i++) {
    const next = nextOccurrence(rule, after);
    if (!next) break;
    times.push(next);
    after = next;
  }
  return times;
}

describe('the DST table (issue 24)', () => {
  it.each(
    DST_CASES.map((row) => [row.zone, row.change, ruleLabel(row.rule), row] as const),
  )('%s, %s: %s', (_zone, _change, _label, row) => {
    const fired = occurrences(row.rule, row.from, row.expected.length);
    expect(fired.map((instant) => formatOccurrence(instant, row.zone))).toEqual(row.expected);
  });

  // Elapsed time over a year of 8,760 hours: with whole-hour shifts every gap is one real hour.
  // Lord Howe's 30-minute shift cannot keep an hour at :MM: at :45 both changes give a gap of 30
  // (01:45 twice at the fall-back; 01:45 to 02:45 over the jump), at :15 both give 90 (02:15
  // skipped by the jump; the repeated 01:30-02:00 holds no :15).
  it.each([
    ['Europe/Oslo', '30 * * * *', { 60: 8759 }],
    ['America/New_York', '0 * * * *', { 60: 8759 }],
    ['Asia/Kolkata', '30 * * * *', { 60: 8759 }],
    ['Australia/Lord_Howe', '45 * * * *', { 30: 2, 60: 8758 }],
    ['Australia/Lord_Howe', '15 * * * *', { 60: 8756, 90: 2 }],
  ])('%s, %s: the real gaps over 2026 (minutes: how many)', (zone, cron, gaps) => {
    const rule: Rule = { kind: 'cron', cron, timeZone: zone };
    const end = Date.parse('2027-01-01T00:00:00Z');
    const counted: Record<number, number> = {};
    let previous = nextOccurrence(rule, new Date('2025-12-31T23:59:00Z'));
    for (let next = previous && nextOccurrence(rule, previous); previous && next; ) {
      if (next.getTime() >= end) break;
      const gap = (next.getTime() - previous.getTime()) / 60_000;
      counted[gap] = (counted[gap] ?? 0) + 1;
      previous = next;
      next = nextOccurrence(rule, next);
    }
    expect(counted).toEqual(gaps);
  });

  it('never fires twice for one instant, and every step moves forward', () => {
    for (const row of DST_CASES) {
      const fired = occurrences(row.rule, row.from, 50).map((instant) => instant.getTime());
      expect(new Set(fired).size).toBe(fired.length);
      for (let i = 1; i < fired.length; i++) {
        expect(fired[i]).toBeGreaterThan(fired[i - 1] ?? 0);
      }
    }
  });
});
