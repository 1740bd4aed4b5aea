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
