import { describe, expect, it } from 'vitest';
import { totalsPerDay } from './settings-usage-days';

const row = (day: string, model: string, purpose: 'chat' | 'utility' | 'embed', calls: number) => ({
  day,
  provider: 'openai',
  model,
  purpose,
  inputTokens: 100 * calls,
  outputTokens: 10 * calls,
  costUsd: 0.001 * calls,
  requests: calls,
});

describe('totalsPerDay', () => {
  it("adds up a day's models and purposes, and keeps the API's order of days", () => {
    const days = totalsPerDay([
      row('2026-11-29', 'big', 'chat', 3),
      row('2026-11-29', 'small', 'utility', 2),
      row('2026-11-28', 'embedder', 'embed', 1),
      row('2026-11-29', 'embedder', 'embed', 5),
    ]);
    expect(days.map((day) => day.day)).toEqual(['2026-11-29', '2026-11-28']);
    expect(days[0]).toMatchObject({ requests: 10, inputTokens: 1_000, outputTokens: 100 });
    expect(days[0]?.costUsd).toBeCloseTo(0.01);
    expect(days[1]).toMatchObject({ requests: 1, inputTokens: 100, outputTokens: 10 });
  });

  it('gives nothing for no rows', () => {
    expect(totalsPerDay([])).toEqual([]);
  });
});
