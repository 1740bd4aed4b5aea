// Times told in a named IANA zone (the user's, or a schedule's), not the browser's: a schedule
// fires on its zone's wall clock wherever the user opens the page. Pure, so they are unit-tested.
//
// Intl only, no Temporal polyfill: the UI needs one conversion from a wall time to an instant,
// and temporal-polyfill would add about 19 KB gzipped to a 17 KB bundle. Temporal's
// `compatible` rule for that conversion is the few lines of wallTimeToInstant.

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

const wallFormatters = new Map<string, Intl.DateTimeFormat>();

function wallFormatter(timeZone: string): Intl.DateTimeFormat {
  let formatter = wallFormatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    wallFormatters.set(timeZone, formatter);
  }
  return formatter;
}

type WallTime = { year: number; month: number; day: number; hour: number; minute: number };

function wallTimeAt(epochMs: number, timeZone: string): WallTime & { second: number } {
  const parts: Record<string, number> = {};
  for (const part of wallFormatter(timeZone).formatToParts(epochMs)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return {
    year: parts.year ?? 0,
    month: parts.month ?? 1,
    day: parts.day ?? 1,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
}

// The wall clock read as if it were UTC: the difference from the instant is the zone's offset.
function wallClockAsUtc(epochMs: number, timeZone: string): number {
  const wall = wallTimeAt(epochMs, timeZone);
  return Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
}

function offsetAt(epochMs: number, timeZone: string): number {
  const wholeSecond = Math.floor(epochMs / 1_000) * 1_000;
  return wallClockAsUtc(wholeSecond, timeZone) - wholeSecond;
}

const pad = (value: number) => String(value).padStart(2, '0');

// "2030-01-15T09:00" (what <input type="datetime-local"> holds) in `timeZone`, as an instant.
// A wall time that occurs twice (fall back) is its first occurrence; one that does not exist
// (spring forward) moves forward by the gap, 02:30 becoming 03:30: Temporal's `compatible`, as
// the scheduler reads its cron rules. Undefined for text that is not such a time.
export function wallTimeToInstant(local: string, timeZone: string): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(local);
  if (!match) return undefined;
  const [year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0] = match
    .slice(1)
    .map((value) => Number(value ?? 0));
  const wallMs = Date.UTC(year, month - 1, day, hour, minute, second);
  if (Number.isNaN(wallMs)) return undefined;
  // The offsets in force a day either side: a transition near this wall time lies between them.
  const before = offsetAt(wallMs - DAY_MS, timeZone);
  const after = offsetAt(wallMs + DAY_MS, timeZone);
  const matches = [...new Set([before, after])]
    .map((offset) => wallMs - offset)
    .filter((instant) => wallClockAsUtc(instant, timeZone) === wallMs)
    .sort((a, b) => a - b);
  // In a gap, the offset from before it reads the wall time that much later.
  return new Date(matches[0] ?? wallMs - before);
}

// The instant's wall time in `timeZone`, as <input type="datetime-local"> takes it.
export function toWallTimeInput(instant: Date, timeZone: string): string {
  const wall = wallTimeAt(instant.getTime(), timeZone);
  return `${wall.year}-${pad(wall.month)}-${pad(wall.day)}T${pad(wall.hour)}:${pad(wall.minute)}`;
}

const zonedFormatters = new Map<string, Intl.DateTimeFormat>();

// "Tue, 15 Jan 2030, 09:00 GMT+5:30" in the browser's language, on `timeZone`'s clock, with the
// zone named, so a time is never mistaken for the browser's own.
export function formatInZone(
  iso: string | null | undefined,
  timeZone: string,
  locale?: string,
): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const key = `${locale ?? ''} ${timeZone}`;
  let formatter = zonedFormatters.get(key);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat(locale, {
      timeZone,
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZoneName: 'short',
    });
    zonedFormatters.set(key, formatter);
  }
  return formatter.format(date);
}

export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

// Every zone this browser knows, with `include` (the stored one, which may be an alias the list
// leaves out, such as UTC in some browsers) kept, sorted.
export function timeZoneChoices(include: string[]): string[] {
  const known =
    typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set([...known, 'UTC', ...include])].sort((a, b) => a.localeCompare(b));
}
