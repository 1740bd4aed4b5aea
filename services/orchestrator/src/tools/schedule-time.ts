import * as chrono from 'chrono-node';
import { Temporal } from 'temporal-polyfill';

// When a schedule the model makes should fire, read in the user's zone.

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
      problem: `at: ${isoInZone(at, timeZone)} is in the past (it is now ${isoInZone(now, timeZone)} in ${timeZone})`,
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

// An instant on the wall clock of the zone, with its offset: the form the tool asks the model for,
// so that it can correct a time it got wrong. The user's wording of a time is the scheduler's
// (a schedule's nextRunText).
function isoInZone(instant: Date, timeZone: string): string {
  return Temporal.Instant.fromEpochMilliseconds(instant.getTime())
    .toZonedDateTimeISO(timeZone)
    .toString({ smallestUnit: 'second', timeZoneName: 'never' });
}
