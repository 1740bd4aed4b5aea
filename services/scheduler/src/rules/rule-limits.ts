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
// land 10 minutes before the next one), and the limits are meant per wall-clock rule.
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

// At most how many occurrences in any 24 hours of wall clock: the daily-cap check at creation.
// A 24-hour window holds each time of day once, from one day or the next. Counted on the wall
// clock like the gap: across spring-forward a daily rule can fire twice within 24 real hours.
export function maxRunsPerDay(rule: Rule): number {
  if (rule.kind === 'once') return 1;
  if (rule.kind === 'interval') return Math.ceil(MINUTES_PER_DAY / rule.everyMinutes);
  const spec = compileCron(rule.cron);
  return spec.hours.length * spec.minutes.length;
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
