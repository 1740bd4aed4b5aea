import { Temporal } from 'temporal-polyfill';
import { type CronSpec, isDayMatching } from './cron-spec';
import { compileCron } from './next-occurrence';
import type { Rule } from './rule';

const MINUTES_PER_DAY = 24 * 60;

// The Gregorian calendar repeats weekdays and leap days every 400 years (146,097 days), so one
// cycle holds every gap between matching days that any year can have.
const CYCLE_START = Date.UTC(2001, 0, 1);
const CYCLE_DAYS = 146_097;

// The shortest gap between two occurrences in minutes (Infinity for once): the minimum-interval
// check. For cron it is the nominal wall-clock gap: DST can make a real gap shorter (a daily rule
// spans 23 hours over spring-forward; on Lord Howe a wall time shifted by the 30-minute gap can
// land 10 minutes before the next one; an elapsed-time `0 */2 * * *` fires at both 02:00s of a
// fall-back, an hour apart), and the limits are meant per wall-clock rule.
export function shortestGapMinutes(rule: Rule): number {
  if (rule.kind === 'once') return Number.POSITIVE_INFINITY;
  if (rule.kind === 'interval') return rule.everyMinutes;
  const spec = compileCron(rule.cron);
  const times = timesOfDay(spec);
  const first = times[0];
  const last = times[times.length - 1];
  if (first === undefined || last === undefined) return Number.POSITIVE_INFINITY;
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < times.length; i++) {
    shortest = Math.min(shortest, (times[i] ?? 0) - (times[i - 1] ?? 0));
  }
  const dayGap = shortestDayGap(spec);
  return Math.min(shortest, dayGap * MINUTES_PER_DAY - last + first);
}

// At most how many occurrences in a day: the daily-cap check at creation. A 24-hour window of
// wall clock holds each time of day once, from one day or the next. A wall-clock rule is counted
// on the wall clock like the gap (across spring-forward a daily rule can fire twice within 24 real
// hours). An elapsed-time rule also fires in the stretch a fall-back repeats, within a calendar
// day or any 24 real hours across the change: an hourly rule fires 25 times on Oslo's 25-hour day.
export function maxRunsPerDay(rule: Rule): number {
  if (rule.kind === 'once') return 1;
  if (rule.kind === 'interval') return Math.ceil(MINUTES_PER_DAY / rule.everyMinutes);
  const spec = compileCron(rule.cron);
  const perDay = spec.hours.length * spec.minutes.length;
  if (!spec.isElapsed) return perDay;
  return perDay + mostTimesWithin(timesOfDay(spec), largestFallBackMinutes(rule.timeZone));
}

// The most times of day (minutes, ascending) in any half-open window `minutes` long, the window
// allowed to wrap past midnight.
function mostTimesWithin(times: number[], minutes: number): number {
  if (minutes <= 0) return 0;
  const wrapped = [...times, ...times.map((time) => time + MINUTES_PER_DAY)];
  let most = 0;
  let start = 0;
  for (let end = 0; end < wrapped.length; end++) {
    while ((wrapped[end] ?? 0) - (wrapped[start] ?? 0) >= minutes) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return Math.min(most, times.length);
}

// The zone's transitions from 2020 (before any schedule this code sees) to 2040: tzdb's current
// rules repeat yearly past their last change, and a zone that gave up DST since 2020 still counts
// its old fall-back, erring high. Transitions are taken to be at least a day apart, as they are.
const SHIFTS_FROM = Date.UTC(2020, 0, 1);
const SHIFTS_TO = Date.UTC(2040, 0, 1);

// Walking a zone's transitions through the polyfill costs about a millisecond each.
const MAX_CACHED_ZONES = 1_000;
const fallBackCache = new Map<string, number>();

// The longest a fall-back of the zone sets its clocks back, in minutes (0 for a zone without one).
function largestFallBackMinutes(timeZone: string): number {
  const cached = fallBackCache.get(timeZone);
  if (cached !== undefined) return cached;
  let largest = 0;
  let zoned = Temporal.Instant.fromEpochMilliseconds(SHIFTS_FROM).toZonedDateTimeISO(timeZone);
  for (;;) {
    const next = zoned.getTimeZoneTransition('next');
    if (!next || next.epochMilliseconds > SHIFTS_TO) break;
    const back = (zoned.offsetNanoseconds - next.offsetNanoseconds) / 60e9;
    largest = Math.max(largest, back);
    zoned = next;
  }
  if (fallBackCache.size >= MAX_CACHED_ZONES) fallBackCache.clear();
  fallBackCache.set(timeZone, largest);
  return largest;
}

function timesOfDay(spec: CronSpec): number[] {
  return spec.hours.flatMap((hour) => spec.minutes.map((minute) => hour * 60 + minute));
}

function shortestDayGap(spec: CronSpec): number {
  let shortest = Number.POSITIVE_INFINITY;
  let previous: number | undefined;
  for (let index = 0; index < CYCLE_DAYS && shortest > 1; index++) {
    const date = new Date(CYCLE_START + index * 86_400_000);
    if (!isDayMatching(spec, date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate())) {
      continue;
    }
    if (previous !== undefined) shortest = Math.min(shortest, index - previous);
    previous = index;
  }
  return shortest;
}
