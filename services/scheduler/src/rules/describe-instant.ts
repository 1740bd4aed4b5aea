import { Temporal } from 'temporal-polyfill';

// English names rather than Intl: the wording is part of the answers the model and the user see,
// and ICU builds differ on punctuation between versions.
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
export const MONTHS = [
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

// "Tuesday 3 December, 09:00 Oslo time": how tools and answers state a time in a zone, so the user
// can correct it. The year is added when it is not the current one (in that zone) of `now`.
export function describeInstant(instant: Date, timeZone: string, now: Date = new Date()): string {
  const zoned = zonedAt(instant, timeZone);
  const year = zoned.year === zonedAt(now, timeZone).year ? '' : ` ${zoned.year}`;
  const time = `${pad(zoned.hour)}:${pad(zoned.minute)}`;
  return `${WEEKDAYS[zoned.dayOfWeek - 1]} ${zoned.day} ${MONTHS[zoned.month - 1]}${year}, ${time} ${placeOf(zoned)}`;
}

function zonedAt(instant: Date, timeZone: string): Temporal.ZonedDateTime {
  return Temporal.Instant.fromEpochMilliseconds(instant.getTime()).toZonedDateTimeISO(timeZone);
}

// The city of an IANA name ("America/New_York" is New York time). Zones without a place (UTC,
// Etc/GMT+5, "+05:30") are told by their offset, which Etc/GMT names state with the sign inverted.
function placeOf(zoned: Temporal.ZonedDateTime): string {
  const id = zoned.timeZoneId;
  if (id === 'UTC' || id === 'Etc/UTC' || id === 'Etc/GMT' || id === 'GMT') return 'UTC';
  if (id.includes('/') && !id.startsWith('Etc/')) {
    return `${(id.split('/').at(-1) ?? id).replaceAll('_', ' ')} time`;
  }
  return zoned.offsetNanoseconds === 0 ? 'UTC' : `UTC${zoned.offset}`;
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}
