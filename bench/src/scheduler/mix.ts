import type { SchedulesCreateRequest } from '@jarvis/contracts';

// The standing load of the scheduler bench: for each user, the schedules a heavy user of a
// personal assistant might keep. None falls due while the bench runs (cron hours at least two
// hours ahead on the user's clock, intervals starting later, one-shot reminders days away), so
// the bench sees the scheduler carry them, not fire them.

type ScheduleFields = SchedulesCreateRequest['schedule'];

// Users are spread over these zones: DST in both hemispheres, a half-hour offset, none.
const ZONES = [
  'Europe/Oslo',
  'America/New_York',
  'America/Los_Angeles',
  'Asia/Kolkata',
  'Australia/Sydney',
  'UTC',
] as const;

// Per user, adding up to SCHEDULES_PER_USER.
const MIX = {
  daily: 35,
  weekdays: 15,
  weekly: 15,
  // A morning briefing and a weekly review: agent work, within the daily cap and interval.
  prompts: 2,
  interval: 13,
  once: 20,
} as const;
export const SCHEDULES_PER_USER = Object.values(MIX).reduce((sum, count) => sum + count, 0);

const INTERVAL_MINUTES = [60, 120, 180, 360, 720, 1_440] as const;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

function localHour(timeZone: string, now: Date): number {
  const hour = new Intl.DateTimeFormat('en-GB', { timeZone, hour: 'numeric', hourCycle: 'h23' })
    .formatToParts(now)
    .find((part) => part.type === 'hour')?.value;
  return Number(hour);
}

export function userTimeZone(userIndex: number): string {
  return ZONES[userIndex % ZONES.length] ?? 'UTC';
}

// The schedules of the user with this index (deterministic, so every run carries the same
// load), given in the user's zone as the agent tools and the API would make them.
export function userSchedules(userIndex: number, now: Date): ScheduleFields[] {
  const timeZone = userTimeZone(userIndex);
  // Two to 21 hours ahead of the rule's clock: a whole hour at least before the first is due.
  const hourAhead = (index: number, zone = timeZone) =>
    (localHour(zone, now) + 2 + ((index * 7 + userIndex) % 20)) % 24;
  const minute = (index: number) => (index * 13 + userIndex * 7) % 60;
  const remind = (text: string) => ({ type: 'remind' as const, text });
  const schedules: ScheduleFields[] = [];
  let index = 0;
  const next = () => index++;
  for (let i = 0; i < MIX.daily; i++) {
    const n = next();
    schedules.push({
      kind: 'cron',
      cron: `${minute(n)} ${hourAhead(n)} * * *`,
      action: remind(`daily ${n}: take the vitamins`),
    });
  }
  for (let i = 0; i < MIX.weekdays; i++) {
    const n = next();
    schedules.push({
      kind: 'cron',
      cron: `${minute(n)} ${hourAhead(n)} * * 1-5`,
      action: remind(`weekdays ${n}: stand-up notes`),
    });
  }
  for (let i = 0; i < MIX.weekly; i++) {
    const n = next();
    // Some rules name a zone of their own (a colleague's office hours, say).
    const zone = n % 5 === 0 ? 'UTC' : timeZone;
    schedules.push({
      kind: 'cron',
      cron: `${minute(n)} ${hourAhead(n, zone)} * * ${n % 7}`,
      timeZone: zone,
      action: remind(`weekly ${n}: water the plants`),
    });
  }
  const briefing = next();
  schedules.push({
    kind: 'cron',
    cron: `0 ${hourAhead(briefing)} * * *`,
    action: { type: 'prompt', instruction: 'Brief me on my day: calendar, weather, open tasks.' },
  });
  const review = next();
  schedules.push({
    kind: 'cron',
    cron: `30 ${hourAhead(review)} * * 5`,
    action: { type: 'prompt', instruction: 'Review my week and list what is still open.' },
  });
  for (let i = 0; i < MIX.interval; i++) {
    const n = next();
    schedules.push({
      kind: 'interval',
      everyMinutes: INTERVAL_MINUTES[n % INTERVAL_MINUTES.length] ?? 60,
      startAt: new Date(now.getTime() + 2 * HOUR_MS + ((n * 3_571_000) % DAY_MS)).toISOString(),
      action: remind(`interval ${n}: drink some water`),
    });
  }
  for (let i = 0; i < MIX.once; i++) {
    const n = next();
    schedules.push({
      kind: 'once',
      // One to 180 days ahead.
      at: new Date(
        now.getTime() + DAY_MS + ((n * 7_919_000_000 + userIndex * HOUR_MS) % (179 * DAY_MS)),
      ).toISOString(),
      action: remind(`once ${n}: renew the passport`),
    });
  }
  return schedules;
}
