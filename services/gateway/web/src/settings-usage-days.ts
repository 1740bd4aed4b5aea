import type { ModelUsageResponse, UsageTotals } from '@jarvis/contracts';

type DayTotals = UsageTotals & { day: string };

// The API answers a row per day, model and purpose; a person reads a day at a time.
export function totalsPerDay(rows: ModelUsageResponse['days']): DayTotals[] {
  const days = new Map<string, DayTotals>();
  for (const row of rows) {
    const day = days.get(row.day) ?? {
      day: row.day,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      requests: 0,
    };
    day.inputTokens += row.inputTokens;
    day.outputTokens += row.outputTokens;
    day.costUsd += row.costUsd;
    day.requests += row.requests;
    days.set(row.day, day);
  }
  return [...days.values()];
}
