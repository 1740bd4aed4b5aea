import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// The weekly roll-up of episodic memory. Each agent run is an episode file,
// `episodes/YYYY-MM-DD/HHMM-<run>.md`; once an ISO week (in UTC) is over, the utility model
// summarises its episodes into `episodes/weeks/<YYYY>-W<ww>.md`, with links to each of them,
// once per week and user. The scheduler's weekly system job asks which users are due
// (memory.episodes.weeksPending) and rolls each up (memory.episodes.rollup).

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
const ISO_WEEK = /^(\d{4})-W(\d{2})$/;

export const WEEKS_PENDING_MAX_LIMIT = 1_000;
// A roll-up waits on the utility model (memory's UTILITY_MODEL_TIMEOUT_MS, 2 minutes by
// default): a caller that gives up sooner would retry a call that is still going.
export const EPISODES_ROLLUP_TIMEOUT_MS = 150_000;

// Monday 00:00 UTC of the year's week 1: the week that holds 4 January.
function mondayOfWeekOne(year: number): number {
  // setUTCFullYear, not Date.UTC, which reads years 0-99 as 1900-1999.
  const january4 = new Date(0);
  january4.setUTCFullYear(year, 0, 4);
  const daysSinceMonday = (january4.getUTCDay() + 6) % 7;
  return january4.getTime() - daysSinceMonday * DAY_MS;
}

function weeksInIsoYear(year: number): number {
  return Math.round((mondayOfWeekOne(year + 1) - mondayOfWeekOne(year)) / WEEK_MS);
}

// The instants an ISO week spans, [start, end), in UTC; undefined when the text names no week
// (a week 53 in a year of 52 weeks, say).
export function isoWeekBounds(week: string): { start: Date; end: Date } | undefined {
  const match = ISO_WEEK.exec(week);
  if (!match) return undefined;
  const year = Number(match[1]);
  const number = Number(match[2]);
  if (year < 1 || number < 1 || number > weeksInIsoYear(year)) return undefined;
  const start = mondayOfWeekOne(year) + (number - 1) * WEEK_MS;
  return { start: new Date(start), end: new Date(start + WEEK_MS) };
}

// The ISO week an instant falls in, in UTC: `2026-W48`. The week belongs to the year of its
// Thursday, so 29 December 2025 is in 2026-W01.
export function isoWeekOf(instant: Date): string {
  const midnight = Math.floor(instant.getTime() / DAY_MS) * DAY_MS;
  const thursday = midnight + (3 - ((new Date(midnight).getUTCDay() + 6) % 7)) * DAY_MS;
  const year = new Date(thursday).getUTCFullYear();
  const number = Math.floor((thursday - mondayOfWeekOne(year)) / WEEK_MS) + 1;
  return `${String(year).padStart(4, '0')}-W${String(number).padStart(2, '0')}`;
}

export const IsoWeek = z
  .string()
  .regex(ISO_WEEK, 'an ISO week such as 2026-W48')
  .refine((week) => isoWeekBounds(week) !== undefined, 'no such ISO week in that year');

// memory.episodes.rollup: writes the week's roll-up unless it exists. `written`: made now;
// `exists`: there already (a second call, or one that lost a race with a call at the same time),
// not written again; `no_episodes`: the user has no episode file in that week, nothing written.
// A week not over yet (in UTC) answers bad_request; a model that cannot answer, unavailable,
// with nothing written: call again later.
export const MemoryEpisodesRollupRequest = z.object({ userId: Id, week: IsoWeek });
export type MemoryEpisodesRollupRequest = z.input<typeof MemoryEpisodesRollupRequest>;
export const EpisodesRollupStatus = z.enum(['written', 'exists', 'no_episodes']);
export type EpisodesRollupStatus = z.infer<typeof EpisodesRollupStatus>;
export const MemoryEpisodesRollupResponse = z.object({
  path: z.string(),
  status: EpisodesRollupStatus,
  // The user's episode files in that week now.
  episodeCount: z.number().int().nonnegative(),
});
export type MemoryEpisodesRollupResponse = z.infer<typeof MemoryEpisodesRollupResponse>;
export const memoryEpisodesRollup = defineRpc(
  'memory.episodes.rollup',
  MemoryEpisodesRollupRequest,
  MemoryEpisodesRollupResponse,
);

// memory.episodes.weeksPending: the users with episode files in the week and no roll-up of it,
// in id order, from after the cursor; `next` is absent on the last page. Across users: it is for
// the scheduler's system job, never for a user's request.
export const MemoryEpisodesWeeksPendingRequest = z.object({
  week: IsoWeek,
  after: Id.optional(),
  limit: z.number().int().min(1).max(WEEKS_PENDING_MAX_LIMIT).default(WEEKS_PENDING_MAX_LIMIT),
});
export type MemoryEpisodesWeeksPendingRequest = z.input<typeof MemoryEpisodesWeeksPendingRequest>;
export const MemoryEpisodesWeeksPendingResponse = z.object({
  userIds: z.array(Id),
  next: Id.optional(),
});
export type MemoryEpisodesWeeksPendingResponse = z.infer<typeof MemoryEpisodesWeeksPendingResponse>;
export const memoryEpisodesWeeksPending = defineRpc(
  'memory.episodes.weeksPending',
  MemoryEpisodesWeeksPendingRequest,
  MemoryEpisodesWeeksPendingResponse,
);
