import { CronExpressionParser } from 'cron-parser';
import { MONTHS } from './describe-instant';

// cron-parser (well kept, typed) parses and expands the five fields. It also accepts seconds,
// @-aliases, `?`, `H`, `L` and `#`, which a 5-field rule refuses: they are screened out here,
// before the library sees the text, so every rule we store means the same to any Vixie cron.
// Its own date iteration is not used: the next times are computed on the wall clock with Temporal
// (next-occurrence.ts), where the DST rules of the issue live.

export type CronSpec = {
  // Sorted ascending.
  minutes: readonly number[];
  hours: readonly number[];
  // 1-31, 1-12 and 0-6 (Sunday 0; 7 folds into 0).
  daysOfMonth: ReadonlySet<number>;
  months: ReadonlySet<number>;
  daysOfWeek: ReadonlySet<number>;
  // Vixie cron: when either day field starts with `*`, a day must match both (the starred one
  // is usually all days); when both are restricted, either matching is enough.
  isDayMatchAnd: boolean;
  // The hour field starts with '*' (`*`, `*/2`): a rule of every N minutes or hours, which follows
  // elapsed time across a DST change rather than the wall clock (issue 24; next-occurrence.ts).
  // Decided by the text, as Vixie cron decides its own DST handling: `0-23` is a wall-clock rule.
  isElapsed: boolean;
};

// Vixie cron's day rule: month must match, and then day of month and day of week both (when either
// field starts with '*') or either one (when both are restricted).
export function isDayMatching(spec: CronSpec, year: number, month: number, day: number): boolean {
  if (!spec.months.has(month)) return false;
  const isDomMatch = spec.daysOfMonth.has(day);
  const isDowMatch = spec.daysOfWeek.has(new Date(Date.UTC(year, month - 1, day)).getUTCDay());
  return spec.isDayMatchAnd ? isDomMatch && isDowMatch : isDomMatch || isDowMatch;
}

type FieldName = 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';

const FIELDS: readonly { name: FieldName; range: string; names?: readonly string[] }[] = [
  { name: 'minute', range: '0-59' },
  { name: 'hour', range: '0-23' },
  { name: 'day-of-month', range: '1-31' },
  {
    name: 'month',
    range: '1-12',
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  },
  { name: 'day-of-week', range: '0-7', names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

// The longest month of each number in any year (February 29 in leap years).
const MAX_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

class CronError extends Error {}

type Parts = [minute: string, hour: string, dayOfMonth: string, month: string, dayOfWeek: string];
type FieldValues = readonly (number | string)[];
type FieldCollection = ReturnType<typeof CronExpressionParser.parse>['fields'];

const valuesOf = (fields: FieldCollection): FieldValues[] => [
  fields.minute.values,
  fields.hour.values,
  fields.dayOfMonth.values,
  fields.month.values,
  fields.dayOfWeek.values,
];

// Throws CronError with a message naming the field; checkCron turns it into its answer.
export function parseCron(cron: string): CronSpec {
  const parts = splitFields(cron);
  FIELDS.forEach((field, index) => {
    screenField(parts[index] ?? '', field);
  });
  let values: FieldValues[];
  try {
    values = valuesOf(CronExpressionParser.parse(parts.join(' ')).fields);
  } catch {
    // The whole rule failed: parse each field alone to name the culprit. A rule whose fields are
    // all fine on their own fails only over a day of month no month in it has (31 in April),
    // which checkMatchable words better than the library does.
    values = FIELDS.map((field, index) => parseFieldAlone(parts, index, field));
  }
  return specOf(values, parts);
}

function splitFields(cron: string): Parts {
  const text = cron.trim();
  if (text.startsWith('@')) {
    throw new CronError(
      `cron: '${text}' is not supported; use 5 fields (minute hour day-of-month month day-of-week)`,
    );
  }
  const parts = text === '' ? [] : text.split(/\s+/);
  const [minute, hour, dayOfMonth, month, dayOfWeek, ...rest] = parts;
  if (
    minute === undefined ||
    hour === undefined ||
    dayOfMonth === undefined ||
    month === undefined ||
    dayOfWeek === undefined ||
    rest.length > 0
  ) {
    throw new CronError(
      `cron: expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`,
    );
  }
  return [minute, hour, dayOfMonth, month, dayOfWeek];
}

// Refuses what a 5-field Vixie rule does not have, before the library accepts it as an extension.
function screenField(part: string, field: (typeof FIELDS)[number]): void {
  let rest = part.toUpperCase();
  for (const name of field.names ?? []) rest = rest.replaceAll(name, '0');
  if (!/^[0-9*,/-]+$/.test(rest)) {
    const hint = field.names
      ? `numbers ${field.range} or names ${field.names[0]}-${field.names.at(-1)}`
      : `numbers ${field.range}`;
    throw new CronError(`cron: ${field.name} '${part}' is not supported; use ${hint}, * , - /`);
  }
}

function parseFieldAlone(parts: Parts, index: number, field: (typeof FIELDS)[number]): FieldValues {
  const probe = ['0', '0', '*', '*', '*'];
  probe[index] = parts[index] ?? '';
  try {
    return valuesOf(CronExpressionParser.parse(probe.join(' ')).fields)[index] ?? [];
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const outOfRange = /got value (\S+) expected range (\d+-\d+)/.exec(message);
    if (outOfRange) {
      throw new CronError(`cron: ${field.name} ${outOfRange[1]} is out of range ${outOfRange[2]}`);
    }
    throw new CronError(`cron: ${field.name} '${parts[index]}' is invalid (${message})`);
  }
}

function specOf(values: FieldValues[], parts: Parts): CronSpec {
  const numbers = (index: number) =>
    (values[index] ?? []).filter((value): value is number => typeof value === 'number');
  return {
    minutes: [...new Set(numbers(0))].sort((a, b) => a - b),
    hours: [...new Set(numbers(1))].sort((a, b) => a - b),
    daysOfMonth: new Set(numbers(2)),
    months: new Set(numbers(3)),
    daysOfWeek: new Set(numbers(4).map((day) => day % 7)),
    isDayMatchAnd: parts[2].startsWith('*') || parts[4].startsWith('*'),
    isElapsed: parts[1].startsWith('*'),
  };
}

// A rule that can never fire is refused at creation (the search for its next time gives up after
// 41 years): with the days matched by day of month alone, some listed month must have one of the
// listed days. Weekdays fall on every date of the 400-year calendar, so a weekday restriction
// never makes a rule unmatchable on its own.
function checkMatchable(cron: string): void {
  const parts = splitFields(cron);
  const isByDayOfMonth = !parts[2].startsWith('*') && parts[4].startsWith('*');
  if (!isByDayOfMonth) return;
  const spec = parseCron(cron);
  const firstDay = Math.min(...spec.daysOfMonth);
  const months = [...spec.months].sort((a, b) => a - b);
  if (months.some((month) => firstDay <= (MAX_DAYS_IN_MONTH[month - 1] ?? 0))) return;
  const monthList = months.map((month) => MONTHS[month - 1]).join(', ');
  throw new CronError(
    `cron: day-of-month '${parts[2]}' never occurs in ${monthList}, so the rule would never fire`,
  );
}

// Undefined when fine; otherwise a message naming what is wrong ("cron: minute 61 is out of range 0-59").
export function checkCron(cron: string): string | undefined {
  try {
    parseCron(cron);
    checkMatchable(cron);
    return undefined;
  } catch (error) {
    if (error instanceof CronError) return error.message;
    throw error;
  }
}
