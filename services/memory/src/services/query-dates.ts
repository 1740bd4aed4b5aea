// Dates a query names ("last week", "in March 2023", "yesterday") narrow a search to that range.
// Only explicit calendar phrases count: a bare year ("in 2022") is more often about an event than
// about when something was said, so it does not narrow anything.

export type DateRange = { from: Date; to: Date };

// Lower case, January first: a name's index is its month.
export const MONTHS = [
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

// How long a fact holds, from what its words say: "until Friday", "for the next 3 days", "only
// today", "is on call this week". The end is read on the user's calendar (their time zone), so
// "today" ends at their midnight. A bare "today" or "this week" bounds only a state the user is in
// ("is", "are"): "started a new job today" is lasting news, not a fact that ends tonight.
export function parseValidUntil(text: string, now: Date, timeZone: string): Date | undefined {
  const phrase = text.toLowerCase();
  const span = phrase.match(SPAN);
  if (span) {
    const count = NUMBER_WORDS[span[1] ?? ''] ?? Number(span[1]);
    return new Date(now.getTime() + count * (span[2] === 'week' ? 7 : 1) * DAY_MS);
  }
  const period = UNTIL.exec(phrase)?.[1] ?? PERIOD.exec(phrase)?.slice(1).find(Boolean);
  return period === undefined ? undefined : periodEnd(period, now, timeZone);
}

// "for the next 3 days", "for two weeks".
const SPAN = /\bfor\s+(?:the\s+)?(?:next\s+)?(\d{1,3}|a|one|two|three)\s+(day|week)s?\b/;
// "until Friday", "till tomorrow", "through the end of the month", "until the weekend".
const UNTIL =
  /\b(?:until|till|til|through|thru)\s+(?:next\s+|the\s+end\s+of\s+(?:the\s+)?|the\s+)?(monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|today|tonight|week(?:end)?|month)\b/;
// "only today", "for the rest of the week", "tonight only", "is on call this week".
const PERIOD =
  /\b(?:for|only|just)\s+(?:the\s+rest\s+of\s+)?(?:the\s+|this\s+)?(today|tonight|week(?:end)?|month)\b|\b(today|tonight|this week|this month)\s+only\b|\b(?:is|are|am)\b[^.]*?\b(today|tonight|this week(?:end)?|this month)\b/;

function periodEnd(period: string, now: Date, timeZone: string): Date | undefined {
  const today = localDate(now, timeZone);
  const dayEnd = (days: number) => localMidnight(addDays(today, days + 1), timeZone);
  const word = period.replace(/^this /, '');
  const weekday = WEEKDAYS.indexOf(word);
  if (weekday >= 0) return dayEnd((weekday - today.weekday + 7) % 7);
  switch (word) {
    case 'today':
      return dayEnd(0);
    case 'tonight':
      return new Date(dayEnd(0).getTime() + TONIGHT_ENDS_AT_MS);
    case 'tomorrow':
      return dayEnd(1);
    case 'week':
    case 'weekend':
      return dayEnd(6 - today.weekday);
    case 'month':
      return localMidnight({ ...today, month: today.month + 1, day: 1 }, timeZone);
    default:
      return undefined;
  }
}

// Weekdays from Monday, as the rest of this file counts weeks.
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const NUMBER_WORDS: Record<string, number> = { a: 1, one: 1, two: 2, three: 3 };
// "Tonight" lasts into the small hours: a fact about tonight still holds after midnight.
const TONIGHT_ENDS_AT_MS = 6 * 3_600_000;

// A day on the user's calendar; month counts from 0 and may overflow (Date.UTC carries it).
type LocalDate = { year: number; month: number; day: number; weekday: number };

const calendars = new Map<string, Intl.DateTimeFormat>();

function calendarOf(timeZone: string): Intl.DateTimeFormat {
  let format = calendars.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      hourCycle: 'h23',
    });
    calendars.set(timeZone, format);
  }
  return format;
}

// The wall-clock time in the zone, written as if it were UTC.
function wallTime(date: Date, timeZone: string): number {
  const parts = Object.fromEntries(
    calendarOf(timeZone)
      .formatToParts(date)
      .map((part) => [part.type, Number(part.value)]),
  );
  return Date.UTC(
    parts.year ?? 0,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
}

function localDate(date: Date, timeZone: string): LocalDate {
  const wall = new Date(wallTime(date, timeZone));
  return {
    year: wall.getUTCFullYear(),
    month: wall.getUTCMonth(),
    day: wall.getUTCDate(),
    weekday: (wall.getUTCDay() + 6) % 7,
  };
}

function addDays(date: LocalDate, days: number): LocalDate {
  return { ...date, day: date.day + days };
}

// The instant the local day starts. The zone's offset is read twice: once near the guess and once
// at the answer, which settles a day whose offset changes (daylight saving) before midnight.
function localMidnight(date: LocalDate, timeZone: string): Date {
  const guess = Date.UTC(date.year, date.month, date.day);
  const first = guess - (wallTime(new Date(guess), timeZone) - guess);
  return new Date(guess - (wallTime(new Date(first), timeZone) - first));
}
