import * as chrono from 'chrono-node';
import { Temporal } from 'temporal-polyfill';

// When a schedule the model makes should fire, and how that time is told back: in the user's
// zone, so the user can correct it.

export type ResolvedTime = { at: Date } | { problem: string };

// `text` is an ISO 8601 instant with its offset, or a phrase ("in 20 minutes", "tomorrow at 9",
// "next Friday") read against `now` in `timeZone`. A problem is worded for the model to correct.
export function resolveTime(text: string, now: Date, timeZone: string): ResolvedTime {
  const at = readInstant(text) ?? readPhrase(text, now, timeZone);
  if (!at) {
    return {
      problem: `at: cannot read "${text}" as a time; give an ISO 8601 instant with its offset (2026-12-03T09:00:00+01:00) or a phrase such as "in 20 minutes", "tomorrow at 9" or "next Friday at 17:00"`,
    };
  }
  if (at.getTime() <= now.getTime()) {
    return {
      problem: `at: ${describeInstant(at, timeZone, now)} is in the past (it is now ${describeInstant(now, timeZone, now)})`,
    };
  }
  return { at };
}

function readInstant(text: string): Date | undefined {
  try {
    return new Date(Temporal.Instant.from(text.trim()).epochMilliseconds);
  } catch {
    return undefined;
  }
}

function readPhrase(text: string, now: Date, timeZone: string): Date | undefined {
  const offsetMinutes =
    Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(timeZone)
      .offsetNanoseconds / 60e9;
  // forwardDate: "at 9" after nine means tomorrow's, "Friday" the coming one.
  const [found] = chrono.parse(
    text,
    { instant: now, timezone: offsetMinutes },
    { forwardDate: true },
  );
  if (!found) return undefined;
  const { start } = found;
  // A phrase that fixes its offset is an instant already: one naming its zone ("9am EST"), and
  // a span of hours or minutes from now ("in 20 minutes"), which is elapsed time whatever the
  // wall clock does meanwhile.
  if (start.isCertain('timezoneOffset')) return start.date();
  // Any other phrase is a wall-clock time in the user's zone. Chrono would place it with the
  // offset of now, an hour off when a DST change falls in between ("tomorrow at 9" on the eve
  // of one), so the zone's own rules place it: a time the change skips moves forward by the
  // gap, a time it repeats is its first occurrence (as the scheduler's cron rules do).
  const part = (component: chrono.Component) => start.get(component) ?? 0;
  const wall = Temporal.PlainDateTime.from({
    year: part('year'),
    month: part('month'),
    day: part('day'),
    hour: part('hour'),
    minute: part('minute'),
    second: part('second'),
  });
  return new Date(
    wall.toZonedDateTime(timeZone, { disambiguation: 'compatible' }).epochMilliseconds,
  );
}

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

// "Tuesday 3 December, 09:00 Oslo time", with the year when it is not the current one: the
// scheduler's wording (its rules' describeInstant), so a time reads the same in a tool's answer
// and in the scheduler's.
export function describeInstant(instant: Date, timeZone: string, now: Date = new Date()): string {
  const zoned = zonedAt(instant, timeZone);
  const year = zoned.year === zonedAt(now, timeZone).year ? '' : ` ${zoned.year}`;
  const time = `${pad(zoned.hour)}:${pad(zoned.minute)}`;
  return `${WEEKDAYS[zoned.dayOfWeek - 1]} ${zoned.day} ${MONTHS[zoned.month - 1]}${year}, ${time} ${placeOf(zoned)}`;
}

function zonedAt(instant: Date, timeZone: string): Temporal.ZonedDateTime {
  return Temporal.Instant.fromEpochMilliseconds(instant.getTime()).toZonedDateTimeISO(timeZone);
}

// "America/New_York" is New York time. Zones without a place (UTC, Etc/GMT+5) are told by their
// offset, which Etc/GMT names state with the sign inverted.
function placeOf(zoned: Temporal.ZonedDateTime): string {
  const id = zoned.timeZoneId;
  if (id.includes('/') && !id.startsWith('Etc/')) {
    return `${(id.split('/').at(-1) ?? id).replaceAll('_', ' ')} time`;
  }
  return zoned.offsetNanoseconds === 0 ? 'UTC' : `UTC${zoned.offset}`;
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}
