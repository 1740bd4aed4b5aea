import { Temporal } from 'temporal-polyfill';
import { compileCron } from './next-occurrence';
import type { Rule } from './rule';

// The DST table of issue 24: for each zone and each of its 2026 transitions, a daily rule at a wall
// time inside the gap or the overlap (wall clock), an hourly cron rule (elapsed time: it fires
// whenever the zone's clock reads :MM, so twice in a repeated hour and never in a skipped one) and
// a 60-minute interval, with the exact instants they fire at; Oslo also has a two-hourly rule.
// dst-table.test.ts checks them; print-dst-table.ts prints them.
//
// Each line reads "<UTC instant> = <the wall clock there>". Worked out by hand from the zones'
// rules, not from the code under test:
// - Europe/Oslo: CET +01:00, CEST +02:00. 29 March 02:00 -> 03:00 (01:00Z), 25 October 03:00 ->
//   02:00 (01:00Z).
// - America/New_York: EST -05:00, EDT -04:00. 8 March 02:00 -> 03:00 (07:00Z), 1 November 02:00 ->
//   01:00 (06:00Z).
// - Australia/Lord_Howe: +10:30, +11:00 in summer, a 30-minute shift. 5 April 02:00 -> 01:30
//   (4 April 15:00Z), 4 October 02:00 -> 02:30 (3 October 15:30Z).
// - Asia/Kolkata: +05:30 all year; the same rules on Oslo's dates fire 24 hours apart.

export type DstCase = {
  zone: string;
  change: string;
  rule: Rule;
  // The first occurrence listed is the first strictly after this.
  from: string;
  expected: string[];
  note: string;
};

const cron = (expression: string, timeZone: string): Rule => ({
  kind: 'cron',
  cron: expression,
  timeZone,
});
const hourly = (anchor: string): Rule => ({
  kind: 'interval',
  everyMinutes: 60,
  anchor: new Date(anchor),
});

const OSLO = 'Europe/Oslo';
const NEW_YORK = 'America/New_York';
const LORD_HOWE = 'Australia/Lord_Howe';
const KOLKATA = 'Asia/Kolkata';

export const DST_CASES: DstCase[] = [
  {
    zone: OSLO,
    change: 'spring forward, 29 Mar',
    rule: cron('30 2 * * *', OSLO),
    from: '2026-03-27T12:00:00Z',
    expected: [
      '2026-03-28 01:30Z = Sat 28 Mar 02:30 +01:00',
      '2026-03-29 01:30Z = Sun 29 Mar 03:30 +02:00',
      '2026-03-30 00:30Z = Mon 30 Mar 02:30 +02:00',
    ],
    note: '02:30 does not exist: fires once at 03:30',
  },
  {
    zone: OSLO,
    change: 'spring forward, 29 Mar',
    rule: cron('30 * * * *', OSLO),
    from: '2026-03-28T23:00:00Z',
    expected: [
      '2026-03-28 23:30Z = Sun 29 Mar 00:30 +01:00',
      '2026-03-29 00:30Z = Sun 29 Mar 01:30 +01:00',
      '2026-03-29 01:30Z = Sun 29 Mar 03:30 +02:00',
      '2026-03-29 02:30Z = Sun 29 Mar 04:30 +02:00',
    ],
    note: 'no 02:30 that night: every real hour',
  },
  {
    zone: OSLO,
    change: 'spring forward, 29 Mar',
    rule: cron('0 */2 * * *', OSLO),
    from: '2026-03-28T22:30:00Z',
    expected: [
      '2026-03-28 23:00Z = Sun 29 Mar 00:00 +01:00',
      '2026-03-29 02:00Z = Sun 29 Mar 04:00 +02:00',
      '2026-03-29 04:00Z = Sun 29 Mar 06:00 +02:00',
      '2026-03-29 06:00Z = Sun 29 Mar 08:00 +02:00',
    ],
    note: 'no 02:00 that night: 3 real hours from 00:00 to 04:00',
  },
  {
    zone: OSLO,
    change: 'spring forward, 29 Mar',
    rule: hourly('2026-03-28T22:00:00Z'),
    from: '2026-03-28T23:30:00Z',
    expected: [
      '2026-03-29 00:00Z = Sun 29 Mar 01:00 +01:00',
      '2026-03-29 01:00Z = Sun 29 Mar 03:00 +02:00',
      '2026-03-29 02:00Z = Sun 29 Mar 04:00 +02:00',
      '2026-03-29 03:00Z = Sun 29 Mar 05:00 +02:00',
    ],
    note: 'every real hour',
  },
  {
    zone: OSLO,
    change: 'fall back, 25 Oct',
    rule: cron('30 2 * * *', OSLO),
    from: '2026-10-23T12:00:00Z',
    expected: [
      '2026-10-24 00:30Z = Sat 24 Oct 02:30 +02:00',
      '2026-10-25 00:30Z = Sun 25 Oct 02:30 +02:00',
      '2026-10-26 01:30Z = Mon 26 Oct 02:30 +01:00',
    ],
    note: '02:30 occurs twice: fires at the first only',
  },
  {
    zone: OSLO,
    change: 'fall back, 25 Oct',
    rule: cron('30 * * * *', OSLO),
    from: '2026-10-24T23:00:00Z',
    expected: [
      '2026-10-24 23:30Z = Sun 25 Oct 01:30 +02:00',
      '2026-10-25 00:30Z = Sun 25 Oct 02:30 +02:00',
      '2026-10-25 01:30Z = Sun 25 Oct 02:30 +01:00',
      '2026-10-25 02:30Z = Sun 25 Oct 03:30 +01:00',
    ],
    note: 'every real hour, 02:30 twice',
  },
  {
    zone: OSLO,
    change: 'fall back, 25 Oct',
    rule: cron('0 */2 * * *', OSLO),
    from: '2026-10-24T21:30:00Z',
    expected: [
      '2026-10-24 22:00Z = Sun 25 Oct 00:00 +02:00',
      '2026-10-25 00:00Z = Sun 25 Oct 02:00 +02:00',
      '2026-10-25 01:00Z = Sun 25 Oct 02:00 +01:00',
      '2026-10-25 03:00Z = Sun 25 Oct 04:00 +01:00',
    ],
    note: '02:00 twice, 1 real hour apart',
  },
  {
    zone: OSLO,
    change: 'fall back, 25 Oct',
    rule: hourly('2026-10-24T22:00:00Z'),
    from: '2026-10-24T23:30:00Z',
    expected: [
      '2026-10-25 00:00Z = Sun 25 Oct 02:00 +02:00',
      '2026-10-25 01:00Z = Sun 25 Oct 02:00 +01:00',
      '2026-10-25 02:00Z = Sun 25 Oct 03:00 +01:00',
      '2026-10-25 03:00Z = Sun 25 Oct 04:00 +01:00',
    ],
    note: 'every real hour, 02:00 twice',
  },
  {
    zone: NEW_YORK,
    change: 'spring forward, 8 Mar',
    rule: cron('30 2 * * *', NEW_YORK),
    from: '2026-03-06T12:00:00Z',
    expected: [
      '2026-03-07 07:30Z = Sat 7 Mar 02:30 -05:00',
      '2026-03-08 07:30Z = Sun 8 Mar 03:30 -04:00',
      '2026-03-09 06:30Z = Mon 9 Mar 02:30 -04:00',
    ],
    note: '02:30 does not exist: fires once at 03:30',
  },
  {
    zone: NEW_YORK,
    change: 'spring forward, 8 Mar',
    rule: cron('30 * * * *', NEW_YORK),
    from: '2026-03-08T05:00:00Z',
    expected: [
      '2026-03-08 05:30Z = Sun 8 Mar 00:30 -05:00',
      '2026-03-08 06:30Z = Sun 8 Mar 01:30 -05:00',
      '2026-03-08 07:30Z = Sun 8 Mar 03:30 -04:00',
      '2026-03-08 08:30Z = Sun 8 Mar 04:30 -04:00',
    ],
    note: 'no 02:30 that night: every real hour',
  },
  {
    zone: NEW_YORK,
    change: 'spring forward, 8 Mar',
    rule: hourly('2026-03-08T05:00:00Z'),
    from: '2026-03-08T05:30:00Z',
    expected: [
      '2026-03-08 06:00Z = Sun 8 Mar 01:00 -05:00',
      '2026-03-08 07:00Z = Sun 8 Mar 03:00 -04:00',
      '2026-03-08 08:00Z = Sun 8 Mar 04:00 -04:00',
      '2026-03-08 09:00Z = Sun 8 Mar 05:00 -04:00',
    ],
    note: 'every real hour',
  },
  {
    zone: NEW_YORK,
    change: 'fall back, 1 Nov',
    rule: cron('30 1 * * *', NEW_YORK),
    from: '2026-10-30T12:00:00Z',
    expected: [
      '2026-10-31 05:30Z = Sat 31 Oct 01:30 -04:00',
      '2026-11-01 05:30Z = Sun 1 Nov 01:30 -04:00',
      '2026-11-02 06:30Z = Mon 2 Nov 01:30 -05:00',
    ],
    note: '01:30 occurs twice: fires at the first only',
  },
  {
    zone: NEW_YORK,
    change: 'fall back, 1 Nov',
    rule: cron('30 * * * *', NEW_YORK),
    from: '2026-11-01T04:00:00Z',
    expected: [
      '2026-11-01 04:30Z = Sun 1 Nov 00:30 -04:00',
      '2026-11-01 05:30Z = Sun 1 Nov 01:30 -04:00',
      '2026-11-01 06:30Z = Sun 1 Nov 01:30 -05:00',
      '2026-11-01 07:30Z = Sun 1 Nov 02:30 -05:00',
    ],
    note: 'every real hour, 01:30 twice',
  },
  {
    zone: NEW_YORK,
    change: 'fall back, 1 Nov',
    rule: hourly('2026-11-01T04:00:00Z'),
    from: '2026-11-01T04:30:00Z',
    expected: [
      '2026-11-01 05:00Z = Sun 1 Nov 01:00 -04:00',
      '2026-11-01 06:00Z = Sun 1 Nov 01:00 -05:00',
      '2026-11-01 07:00Z = Sun 1 Nov 02:00 -05:00',
      '2026-11-01 08:00Z = Sun 1 Nov 03:00 -05:00',
    ],
    note: 'every real hour, 01:00 twice',
  },
  {
    zone: LORD_HOWE,
    change: 'fall back 30 min, 5 Apr',
    rule: cron('45 1 * * *', LORD_HOWE),
    from: '2026-04-03T00:00:00Z',
    expected: [
      '2026-04-03 14:45Z = Sat 4 Apr 01:45 +11:00',
      '2026-04-04 14:45Z = Sun 5 Apr 01:45 +11:00',
      '2026-04-05 15:15Z = Mon 6 Apr 01:45 +10:30',
    ],
    note: '01:45 occurs twice: fires at the first only',
  },
  {
    zone: LORD_HOWE,
    change: 'fall back 30 min, 5 Apr',
    rule: cron('45 * * * *', LORD_HOWE),
    from: '2026-04-04T13:00:00Z',
    expected: [
      '2026-04-04 13:45Z = Sun 5 Apr 00:45 +11:00',
      '2026-04-04 14:45Z = Sun 5 Apr 01:45 +11:00',
      '2026-04-04 15:15Z = Sun 5 Apr 01:45 +10:30',
      '2026-04-04 16:15Z = Sun 5 Apr 02:45 +10:30',
    ],
    note: '01:45 twice, 30 real minutes apart (a 30-minute shift)',
  },
  {
    zone: LORD_HOWE,
    change: 'fall back 30 min, 5 Apr',
    rule: hourly('2026-04-04T13:00:00Z'),
    from: '2026-04-04T13:30:00Z',
    expected: [
      '2026-04-04 14:00Z = Sun 5 Apr 01:00 +11:00',
      '2026-04-04 15:00Z = Sun 5 Apr 01:30 +10:30',
      '2026-04-04 16:00Z = Sun 5 Apr 02:30 +10:30',
      '2026-04-04 17:00Z = Sun 5 Apr 03:30 +10:30',
    ],
    note: 'every real hour',
  },
  {
    zone: LORD_HOWE,
    change: 'spring forward 30 min, 4 Oct',
    rule: cron('15 2 * * *', LORD_HOWE),
    from: '2026-10-02T00:00:00Z',
    expected: [
      '2026-10-02 15:45Z = Sat 3 Oct 02:15 +10:30',
      '2026-10-03 15:45Z = Sun 4 Oct 02:45 +11:00',
      '2026-10-04 15:15Z = Mon 5 Oct 02:15 +11:00',
    ],
    note: '02:15 does not exist: fires once at 02:45',
  },
  {
    zone: LORD_HOWE,
    change: 'spring forward 30 min, 4 Oct',
    rule: cron('15 * * * *', LORD_HOWE),
    from: '2026-10-03T13:30:00Z',
    expected: [
      '2026-10-03 13:45Z = Sun 4 Oct 00:15 +10:30',
      '2026-10-03 14:45Z = Sun 4 Oct 01:15 +10:30',
      '2026-10-03 16:15Z = Sun 4 Oct 03:15 +11:00',
      '2026-10-03 17:15Z = Sun 4 Oct 04:15 +11:00',
    ],
    note: 'no 02:15 that night: 90 real minutes from 01:15 to 03:15',
  },
  {
    zone: LORD_HOWE,
    change: 'spring forward 30 min, 4 Oct',
    rule: hourly('2026-10-03T13:30:00Z'),
    from: '2026-10-03T14:00:00Z',
    expected: [
      '2026-10-03 14:30Z = Sun 4 Oct 01:00 +10:30',
      '2026-10-03 15:30Z = Sun 4 Oct 02:30 +11:00',
      '2026-10-03 16:30Z = Sun 4 Oct 03:30 +11:00',
      '2026-10-03 17:30Z = Sun 4 Oct 04:30 +11:00',
    ],
    note: 'every real hour',
  },
  {
    zone: KOLKATA,
    change: 'none (Oslo: 29 Mar)',
    rule: cron('30 2 * * *', KOLKATA),
    from: '2026-03-27T12:00:00Z',
    expected: [
      '2026-03-27 21:00Z = Sat 28 Mar 02:30 +05:30',
      '2026-03-28 21:00Z = Sun 29 Mar 02:30 +05:30',
      '2026-03-29 21:00Z = Mon 30 Mar 02:30 +05:30',
    ],
    note: '24 hours apart',
  },
  {
    zone: KOLKATA,
    change: 'none (Oslo: 29 Mar)',
    rule: cron('30 * * * *', KOLKATA),
    from: '2026-03-28T18:30:00Z',
    expected: [
      '2026-03-28 19:00Z = Sun 29 Mar 00:30 +05:30',
      '2026-03-28 20:00Z = Sun 29 Mar 01:30 +05:30',
      '2026-03-28 21:00Z = Sun 29 Mar 02:30 +05:30',
      '2026-03-28 22:00Z = Sun 29 Mar 03:30 +05:30',
    ],
    note: 'every hour',
  },
  {
    zone: KOLKATA,
    change: 'none (Oslo: 29 Mar)',
    rule: hourly('2026-03-28T18:30:00Z'),
    from: '2026-03-28T19:00:00Z',
    expected: [
      '2026-03-28 19:30Z = Sun 29 Mar 01:00 +05:30',
      '2026-03-28 20:30Z = Sun 29 Mar 02:00 +05:30',
      '2026-03-28 21:30Z = Sun 29 Mar 03:00 +05:30',
      '2026-03-28 22:30Z = Sun 29 Mar 04:00 +05:30',
    ],
    note: 'every hour',
  },
  {
    zone: KOLKATA,
    change: 'none (Oslo: 25 Oct)',
    rule: cron('30 2 * * *', KOLKATA),
    from: '2026-10-23T12:00:00Z',
    expected: [
      '2026-10-23 21:00Z = Sat 24 Oct 02:30 +05:30',
      '2026-10-24 21:00Z = Sun 25 Oct 02:30 +05:30',
      '2026-10-25 21:00Z = Mon 26 Oct 02:30 +05:30',
    ],
    note: '24 hours apart',
  },
  {
    zone: KOLKATA,
    change: 'none (Oslo: 25 Oct)',
    rule: cron('30 * * * *', KOLKATA),
    from: '2026-10-24T18:30:00Z',
    expected: [
      '2026-10-24 19:00Z = Sun 25 Oct 00:30 +05:30',
      '2026-10-24 20:00Z = Sun 25 Oct 01:30 +05:30',
      '2026-10-24 21:00Z = Sun 25 Oct 02:30 +05:30',
      '2026-10-24 22:00Z = Sun 25 Oct 03:30 +05:30',
    ],
    note: 'every hour',
  },
];

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// "2026-03-29 01:30Z = Sun 29 Mar 03:30 +02:00", the form of the expected lines.
export function formatOccurrence(instant: Date, timeZone: string): string {
  const utc = instant.toISOString();
  const zoned = Temporal.Instant.fromEpochMilliseconds(instant.getTime()).toZonedDateTimeISO(
    timeZone,
  );
  const time = `${String(zoned.hour).padStart(2, '0')}:${String(zoned.minute).padStart(2, '0')}`;
  const local = `${WEEKDAYS[zoned.dayOfWeek - 1]} ${zoned.day} ${MONTHS[zoned.month - 1]} ${time} ${zoned.offset}`;
  return `${utc.slice(0, 10)} ${utc.slice(11, 16)}Z = ${local}`;
}

// What the rule follows across a change, as the code decides it (issue 24's point 4).
export function followsLabel(rule: Rule): string {
  if (rule.kind === 'cron' && !compileCron(rule.cron).isElapsed) return 'wall clock';
  return 'elapsed time';
}

export function ruleLabel(rule: Rule): string {
  if (rule.kind === 'cron') return `cron ${rule.cron}`;
  if (rule.kind === 'interval') return `every ${rule.everyMinutes} min`;
  return `once ${rule.at.toISOString()}`;
}
