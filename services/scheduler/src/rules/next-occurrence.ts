import { Temporal } from 'temporal-polyfill';
import { type CronSpec, isDayMatching, parseCron } from './cron-spec';

// temporal-polyfill (FullCalendar's) rather than @js-temporal/polyfill: a third of the size
// (19 kB against 52 kB min+gzip), no JSBI dependency, released monthly and tracking the current
// spec; it uses the native Temporal where the runtime has one. Both read zone data from Intl.
//
// Wall times are handled as "local epoch" milliseconds: the wall-clock reading taken as if it were
// UTC, so plain Date.UTC arithmetic walks the civil calendar. Only the zone's offsets need Temporal.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// A rule that can match at all matches within 40 years: the worst is February 29 on one weekday
// (`0 0 29 2 */7`), whose gap spans the non-leap 2100. Past that the rule is taken to never match.
const SEARCH_HORIZON = 41 * 366 * DAY;

// An offset segment less than this long is too short to reason about cheaply (tzdb has none in
// the future); the search then treats the two days after its start as near a transition.
const SETTLE_MARGIN = 2 * DAY;

// Parsing costs more than finding the next time; the engine asks for the same few rules over and
// over. Bounded so a stream of distinct rules cannot grow it without end.
const MAX_CACHED_RULES = 10_000;
const cronCache = new Map<string, CronSpec>();

export function compileCron(cron: string): CronSpec {
  let spec = cronCache.get(cron);
  if (spec) return spec;
  spec = parseCron(cron);
  if (cronCache.size >= MAX_CACHED_RULES) cronCache.clear();
  cronCache.set(cron, spec);
  return spec;
}

// The first occurrence of a cron rule strictly after `afterMs` (epoch ms), or undefined.
//
// Issue 24: rules of a day or longer follow the wall clock, rules of every N minutes or hours
// (the hour field starts with '*') follow elapsed time, so an hourly rule fires every real hour
// across a change instead of skipping the repeated hour.
export function nextCronOccurrence(
  cron: string,
  timeZone: string,
  afterMs: number,
): number | undefined {
  const spec = compileCron(cron);
  return spec.isElapsed
    ? nextElapsedOccurrence(spec, timeZone, afterMs)
    : nextWallOccurrence(spec, timeZone, afterMs);
}

// Elapsed time: the instants whose wall reading, under the offset in force at that instant,
// matches the rule. Within one offset segment those are wall - offset, in order. Across a
// fall-back the repeated readings fire again (`30 * * * *` fires at both 02:30s); the readings a
// spring-forward skips never occur, so nothing is shifted onto the next hour either.
function nextElapsedOccurrence(
  spec: CronSpec,
  timeZone: string,
  afterMs: number,
): number | undefined {
  const horizon = afterMs + SEARCH_HORIZON;
  let cursor = afterMs;
  while (cursor < horizon) {
    // The segment of the first candidate instant, cursor + 1.
    const { offset, end } = segmentAt(timeZone, cursor + 1);
    const last = Math.min(end, horizon) - 1;
    const wall = nextMatchingWall(spec, cursor + offset, last + offset);
    if (wall !== undefined) return wall - offset;
    cursor = last;
  }
  return undefined;
}

// Wall clock: each matching wall time fires at the instant Temporal's 'compatible'
// disambiguation gives it: a wall time in a spring-forward gap moves forward by the gap, one in a
// fall-back overlap takes its first instant. Asking for the first instant strictly after the
// previous one means two wall times landing on one instant (02:30 shifted to 03:30, and 03:30
// itself) fire once.
//
// Away from a transition, wall time = instant + offset, so the next matching wall time gives the
// answer by arithmetic. Near one (just after it, or when that answer would cross it), the mapping
// is not monotonic (the shifted 02:30 lands after the real 03:00), so every wall time that could
// land in a two-day window is resolved through Temporal and the earliest instant wins.
function nextWallOccurrence(spec: CronSpec, timeZone: string, afterMs: number): number | undefined {
  const horizon = afterMs + SEARCH_HORIZON;
  let cursor = afterMs;
  let isCrossing = false;
  while (cursor < horizon) {
    const segment: Segment | undefined = isCrossing
      ? undefined
      : settledSegmentAt(timeZone, cursor);
    if (segment) {
      const wall = nextMatchingWall(spec, cursor + segment.offset, horizon + DAY);
      if (wall === undefined) return undefined;
      const instant = wall - segment.offset;
      if (instant < segment.end) return instant;
      // Nothing fires before the transition at segment.end, and nothing before
      // wall - MAX_OFFSET either, since no wall time before `wall` matches.
      cursor = Math.max(segment.end - 1, wall - MAX_OFFSET - 1);
      isCrossing = cursor === segment.end - 1;
      continue;
    }
    const windowEnd = cursor + SETTLE_MARGIN;
    const best = earliestInWindow(spec, timeZone, cursor, windowEnd);
    if (best !== undefined) return best;
    cursor = windowEnd;
    isCrossing = false;
  }
  return undefined;
}

// Offsets have stayed within ±16 h, local mean times of the 1800s included; a wall time lies at
// most this far from its instant.
const MAX_OFFSET = 16 * HOUR;

// The earliest occurrence in (from, to], resolving each candidate wall time with Temporal.
function earliestInWindow(
  spec: CronSpec,
  timeZone: string,
  from: number,
  to: number,
): number | undefined {
  const { lowest, highest } = offsetRange(timeZone, from - SETTLE_MARGIN, to + SETTLE_MARGIN);
  let best: number | undefined;
  // A wall time w lands at w - offset for one of the offsets in use around it, so only wall times
  // in (from + lowest, best + highest] can land in (from, best].
  let wall: number | undefined = from + lowest;
  for (;;) {
    wall = nextMatchingWall(spec, wall, (best ?? to) + highest);
    if (wall === undefined) return best;
    const instant = resolveWall(wall, timeZone);
    if (instant > from && instant <= to && (best === undefined || instant < best)) best = instant;
  }
}

function resolveWall(wall: number, timeZone: string): number {
  const date = new Date(wall);
  return new Temporal.PlainDateTime(
    date.getUTCFullYear(),
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
  ).toZonedDateTime(timeZone, { disambiguation: 'compatible' }).epochMilliseconds;
}

function offsetRange(timeZone: string, from: number, to: number) {
  let zoned: Temporal.ZonedDateTime | null = zonedAt(timeZone, from);
  let lowest = Number.POSITIVE_INFINITY;
  let highest = Number.NEGATIVE_INFINITY;
  while (zoned && zoned.epochMilliseconds <= to) {
    const offset = zoned.offsetNanoseconds / 1e6;
    lowest = Math.min(lowest, offset);
    highest = Math.max(highest, offset);
    zoned = zoned.getTimeZoneTransition('next');
  }
  return { lowest, highest };
}

function zonedAt(timeZone: string, epochMs: number): Temporal.ZonedDateTime {
  return Temporal.Instant.fromEpochMilliseconds(epochMs).toZonedDateTimeISO(timeZone);
}

type Segment = {
  offset: number;
  // The transition that began it (or -Infinity), and the next one (or Infinity).
  start: number;
  end: number;
  // From here on to `end`, no wall time from before `start` lands in the segment (see
  // settledSegmentAt).
  settledFrom: number;
};

// One segment per zone: the engine's calls mostly fall in the segment of the previous call, and
// resolving a zone through the polyfill costs tens of microseconds. Bounded like the rules: a
// zone may also be a fixed offset ("+05:30"), of which there are many.
const MAX_CACHED_ZONES = 1_000;
const segmentCache = new Map<string, Segment>();

// The offset segment around `epochMs`: within it, instant + offset is the wall reading.
function segmentAt(timeZone: string, epochMs: number): Segment {
  const cached = segmentCache.get(timeZone);
  if (cached && epochMs >= cached.start && epochMs < cached.end) return cached;

  const zoned = zonedAt(timeZone, epochMs);
  const offset = zoned.offsetNanoseconds / 1e6;
  const end = zoned.getTimeZoneTransition('next')?.epochMilliseconds ?? Number.POSITIVE_INFINITY;
  // 'previous' is strictly before its instant; from epochMs + 1 it includes a transition at epochMs.
  const previous = zonedAt(timeZone, epochMs + 1).getTimeZoneTransition('previous');
  let start = Number.NEGATIVE_INFINITY;
  let settledFrom = Number.NEGATIVE_INFINITY;
  if (previous) {
    start = previous.epochMilliseconds;
    const before = zonedAt(timeZone, start - 1);
    const swing = Math.abs(offset - before.offsetNanoseconds / 1e6);
    const previousStart = before.getTimeZoneTransition('previous')?.epochMilliseconds;
    const isPreviousShort = previousStart !== undefined && start - previousStart < SETTLE_MARGIN;
    settledFrom = start + (isPreviousShort ? SETTLE_MARGIN : swing);
  }
  const segment = { offset, start, end, settledFrom };
  if (segmentCache.size >= MAX_CACHED_ZONES) segmentCache.clear();
  segmentCache.set(timeZone, segment);
  return segment;
}

// The segment around `epochMs` when wall times map to instants by plain subtraction there under
// 'compatible', or undefined just after a transition.
//
// That holds once the segment is older than its transition's swing: then no wall time from before
// the transition (repeated by a fall-back, or shifted by a spring-forward gap) lands after epochMs.
function settledSegmentAt(timeZone: string, epochMs: number): Segment | undefined {
  const segment = segmentAt(timeZone, epochMs);
  return epochMs >= segment.settledFrom ? segment : undefined;
}

// The first wall time (local epoch ms, whole minutes) matching the rule strictly after
// `afterWall` and at most `limitWall`. Pure calendar arithmetic: months outside the rule are
// skipped whole, so sparse rules (February 29) take a few hundred steps at most.
function nextMatchingWall(
  spec: CronSpec,
  afterWall: number,
  limitWall: number,
): number | undefined {
  const start = new Date((Math.floor(afterWall / MINUTE) + 1) * MINUTE);
  let year = start.getUTCFullYear();
  let month = start.getUTCMonth() + 1;
  let day = start.getUTCDate();
  let hour = start.getUTCHours();
  let minute = start.getUTCMinutes();
  while (Date.UTC(year, month - 1, day) <= limitWall) {
    if (!spec.months.has(month) || day > daysInMonth(year, month)) {
      month += 1;
      if (month > 12) {
        month = 1;
        year += 1;
      }
      day = 1;
      hour = 0;
      minute = 0;
      continue;
    }
    if (isDayMatching(spec, year, month, day)) {
      const time = firstTimeFrom(spec, hour, minute);
      if (time !== undefined) {
        const wall = Date.UTC(year, month - 1, day, time.hour, time.minute);
        return wall <= limitWall ? wall : undefined;
      }
    }
    day += 1;
    hour = 0;
    minute = 0;
  }
  return undefined;
}

function firstTimeFrom(spec: CronSpec, hour: number, minute: number) {
  for (const h of spec.hours) {
    if (h < hour) continue;
    const m = h === hour ? spec.minutes.find((value) => value >= minute) : spec.minutes[0];
    if (m !== undefined) return { hour: h, minute: m };
  }
  return undefined;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
