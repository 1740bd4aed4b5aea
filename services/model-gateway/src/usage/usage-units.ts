// Days and money as the budgets count them. Redis and Postgres both go through these, so the
// live totals and the rollups agree to the last unit.

const DAY_MS = 86_400_000;

// Cost is counted in nano-dollars: integers add up exactly in Redis and Postgres, and a short
// embedding call on a cheap model (well under a micro-dollar) still counts.
const NANOS_PER_USD = 1_000_000_000;

export function toNanos(usd: number): number {
  return Math.round(usd * NANOS_PER_USD);
}

export function fromNanos(nanos: number): number {
  return nanos / NANOS_PER_USD;
}

// The UTC calendar day of an instant, YYYY-MM-DD: budgets reset at UTC midnight for everyone.
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export function startOfUtcDay(day: string): Date {
  return new Date(`${day}T00:00:00.000Z`);
}

export function addDays(day: string, days: number): string {
  return utcDay(new Date(startOfUtcDay(day).getTime() + days * DAY_MS));
}

// When today's budgets start afresh.
export function nextUtcMidnight(now: Date): Date {
  return startOfUtcDay(addDays(utcDay(now), 1));
}
