// Quiet hours: wall-clock times in the user's zone during which non-urgent notifications wait.

type QuietHours = { start: string; end: string };

const MINUTES_PER_DAY = 24 * 60;

// When the quiet hours that `now` falls in end, or undefined when it falls in none. A start after
// the end spans midnight; a start equal to the end means none (no day-long silence by accident).
export function quietHoursEnd(now: Date, quiet: QuietHours, timeZone: string): Date | undefined {
  const start = toMinutes(quiet.start);
  const end = toMinutes(quiet.end);
  if (start === end) return undefined;
  const local = localMinutes(now, timeZone);
  const isQuiet = start < end ? local >= start && local < end : local >= start || local < end;
  if (!isQuiet) return undefined;
  const startOfMinute = now.getTime() - (now.getTime() % 60_000);
  const ahead = (end - local + MINUTES_PER_DAY) % MINUTES_PER_DAY;
  const guess = new Date(startOfMinute + ahead * 60_000);
  // A clock change (DST) between now and the end moves the wall clock by its offset: one
  // correction lands on the end's wall time (or just after it, when that time does not exist).
  const drift = signedMinutes(end - localMinutes(guess, timeZone));
  return drift === 0 ? guess : new Date(guess.getTime() + drift * 60_000);
}

function toMinutes(wallTime: string): number {
  const [hours, minutes] = wallTime.split(':').map(Number);
  return (hours ?? 0) * 60 + (minutes ?? 0);
}

// A difference of wall-clock minutes as the shortest way round the day.
function signedMinutes(difference: number): number {
  const wrapped = ((difference % MINUTES_PER_DAY) + MINUTES_PER_DAY) % MINUTES_PER_DAY;
  return wrapped > MINUTES_PER_DAY / 2 ? wrapped - MINUTES_PER_DAY : wrapped;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

// Minutes since local midnight of `instant` in the zone.
function localMinutes(instant: Date, timeZone: string): number {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      hour: '2-digit',
      minute: '2-digit',
    });
    formatters.set(timeZone, format);
  }
  let hours = 0;
  let minutes = 0;
  for (const part of format.formatToParts(instant)) {
    if (part.type === 'hour') hours = Number(part.value);
    if (part.type === 'minute') minutes = Number(part.value);
  }
  return hours * 60 + minutes;
}
