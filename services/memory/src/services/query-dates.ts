// Dates a query names ("last week", "in March 2023", "yesterday") narrow a search to that range.
// Only explicit calendar phrases count: a bare year ("in 2022") is more often about an event than
// about when something was said, so it does not narrow anything.

export type DateRange = { from: Date; to: Date };

const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const DAY_MS = 86_400_000;

function startOfDay(date: Date): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
}

function monthRange(year: number, month: number): DateRange {
  return { from: new Date(Date.UTC(year, month, 1)), to: new Date(Date.UTC(year, month + 1, 1)) };
}

// Weeks start on Monday.
function weekStart(date: Date): Date {
  const day = startOfDay(date);
  const offset = (day.getUTCDay() + 6) % 7;
  return new Date(day.getTime() - offset * DAY_MS);
}

export function parseDateRange(query: string, now: Date): DateRange | undefined {
  const text = query.toLowerCase();
  const today = startOfDay(now);
  if (/\btoday\b/.test(text)) return { from: today, to: new Date(today.getTime() + DAY_MS) };
  if (/\byesterday\b/.test(text)) return { from: new Date(today.getTime() - DAY_MS), to: today };
  const relative = text.match(/\b(last|this|past)\s+(week|month|year)\b/);
  if (relative) {
    const [, which, unit] = relative;
    if (unit === 'week') {
      const start = weekStart(now);
      if (which === 'this') return { from: start, to: new Date(start.getTime() + 7 * DAY_MS) };
      if (which === 'past') return { from: new Date(today.getTime() - 7 * DAY_MS), to: now };
      return { from: new Date(start.getTime() - 7 * DAY_MS), to: start };
    }
    if (unit === 'month') {
      const year = now.getUTCFullYear();
      const month = now.getUTCMonth();
      if (which === 'this') return monthRange(year, month);
      if (which === 'past') return { from: new Date(today.getTime() - 30 * DAY_MS), to: now };
      return monthRange(month === 0 ? year - 1 : year, (month + 11) % 12);
    }
    const year = now.getUTCFullYear();
    if (which === 'this')
      return { from: new Date(Date.UTC(year, 0, 1)), to: new Date(Date.UTC(year + 1, 0, 1)) };
    if (which === 'past') return { from: new Date(today.getTime() - 365 * DAY_MS), to: now };
    return { from: new Date(Date.UTC(year - 1, 0, 1)), to: new Date(Date.UTC(year, 0, 1)) };
  }
  const monthPattern = new RegExp(`\\b(?:in|during)\\s+(${MONTHS.join('|')})(?:\\s+(\\d{4}))?\\b`);
  const named = text.match(monthPattern);
  if (named) {
    const month = MONTHS.indexOf(named[1] ?? '');
    if (named[2]) return monthRange(Number(named[2]), month);
    // "in March" without a year: the most recent March that has begun.
    const year = month <= now.getUTCMonth() ? now.getUTCFullYear() : now.getUTCFullYear() - 1;
    return monthRange(year, month);
  }
  return undefined;
}
