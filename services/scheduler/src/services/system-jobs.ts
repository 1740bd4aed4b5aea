import { BusError } from '@jarvis/bus';
import {
  EPISODES_ROLLUP_TIMEOUT_MS,
  type EpisodesRollupStatus,
  isoWeekOf,
  memoryEpisodesRollup,
  memoryEpisodesWeeksPending,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { postponeRun, type RunRecord } from '../repositories/runs-repository';
import { insertSchedule, type SystemScheduleRecord } from '../repositories/schedules-repository';
import { nextOccurrence, type Rule } from '../rules';
import type { DeliveryDeps } from './deliver';
import { forEachBounded } from './for-each-bounded';
import { isTransient } from './transient-error';

// The scheduler's own jobs, schedules without a user that the engine claims and delivers like
// any other: a run per occurrence, so each happens once however many replicas run. The first is
// the weekly roll-up of memory: each finished ISO week's episodes summarised per user.

// Fixed, so that every start (of every replica) finds the same row instead of adding one.
export const WEEKLY_ROLLUP_SCHEDULE_ID = '5c4e1f0a-9b7d-4e2a-8f31-6d0b2a7c9e14';

// Monday 03:00 UTC: the week (in UTC, as memory counts it) has been over for three hours.
const WEEKLY_ROLLUP_RULE: Rule = { kind: 'cron', cron: '0 3 * * 1', timeZone: 'UTC' };
// A roll-up missed while the scheduler was down runs once when it is back, any day of that week.
const WEEKLY_ROLLUP_GRACE_MINUTES = 6 * 24 * 60;
const WEEK_MS = 7 * 24 * 3600_000;
// Each roll-up is a call to the utility model: two at once keep a local model from queueing
// every user's week behind each other's, and the job from holding it all night.
const ROLLUP_CONCURRENCY = 2;
const PAGE_SIZE = 200;
const PAGE_TIMEOUT_MS = 10_000;
// A job outlasts the engine's lease: each roll-up renews it past its own longest wait, so that
// no other replica takes the run over while a model call is still going.
const LEASE_MARGIN_MS = 30_000;

// Makes the system schedules that are not there yet, at every start. A new one's first
// occurrence is the latest one already past, so that a first start still rolls up the week just
// finished (within the grace window; past it, the run is recorded missed).
export async function ensureSystemSchedules(pool: Pool, now = new Date()): Promise<void> {
  const latest = nextOccurrence(WEEKLY_ROLLUP_RULE, new Date(now.getTime() - WEEK_MS));
  const schedule: SystemScheduleRecord = {
    id: WEEKLY_ROLLUP_SCHEDULE_ID,
    userId: null,
    kind: 'cron',
    name: 'weekly roll-up of memory episodes',
    action: { type: 'system', job: 'weekly_rollup' },
    rule: WEEKLY_ROLLUP_RULE,
    timeZone: 'UTC',
    conversationId: null,
    missedPolicy: 'run_once',
    missedMaxRuns: 1,
    graceMinutes: WEEKLY_ROLLUP_GRACE_MINUTES,
    startAt: null,
    endAt: null,
    maxRuns: null,
    runCount: 0,
    nextRunAt: latest ?? null,
    snoozeAt: null,
    status: 'active',
    createdBy: 'system',
    sourceRunId: null,
    createdAt: now,
    updatedAt: now,
  };
  await insertSchedule(pool, schedule);
}

type RollupCounts = Record<EpisodesRollupStatus | 'failed' | 'retry', number>;

// Rolls up, for every user who has episodes in it and no roll-up yet, the ISO week before the
// one the run was due in. Answers what it did, the run's reason. Memory writes a week's roll-up
// once (a second call answers exists), so a run delivered again (a lease taken over, a retry)
// does only what is left. A user whose roll-up could not be made now (the model unavailable)
// makes the whole run wait and run again later; memory then lists only the users still left.
async function rollUpWeek(
  deps: DeliveryDeps,
  run: RunRecord,
  signal: AbortSignal,
): Promise<string> {
  const week = isoWeekOf(new Date(run.scheduledFor.getTime() - WEEK_MS));
  const counts: RollupCounts = { written: 0, exists: 0, no_episodes: 0, failed: 0, retry: 0 };
  const rollUpUser = async (userId: string) => {
    if (signal.aborted) return;
    const leaseUntil = new Date(Date.now() + EPISODES_ROLLUP_TIMEOUT_MS + LEASE_MARGIN_MS);
    await postponeRun(deps.pool, run.id, leaseUntil);
    try {
      const { status } = await deps.bus.request(
        memoryEpisodesRollup,
        { userId, week },
        { timeoutMs: EPISODES_ROLLUP_TIMEOUT_MS },
      );
      counts[status] += 1;
    } catch (error) {
      counts[isTransient(error) ? 'retry' : 'failed'] += 1;
      deps.logger.warn({ err: error, userId, week }, 'weekly roll-up of a user failed');
    }
  };
  let after: string | undefined;
  do {
    const page = await deps.bus.request(
      memoryEpisodesWeeksPending,
      { week, after, limit: PAGE_SIZE },
      { timeoutMs: PAGE_TIMEOUT_MS },
    );
    await forEachBounded(page.userIds, ROLLUP_CONCURRENCY, rollUpUser);
    after = page.next;
  } while (after && !signal.aborted);
  const summary =
    `${week}: ${counts.written} written, ${counts.exists} existed, ` +
    `${counts.no_episodes} without episodes`;
  // Stopping: the rest is left to the next delivery, at once, by whichever replica.
  if (signal.aborted) throw new BusError('unavailable', `${summary}; the scheduler stopped`);
  if (counts.retry > 0) {
    throw new BusError('unavailable', `${summary}; ${counts.retry} to try again`);
  }
  if (counts.failed > 0) throw new BusError('internal', `${summary}; ${counts.failed} failed`);
  return summary;
}

// Delivers a system job's run; answers what it did.
export function runSystemJob(
  deps: DeliveryDeps,
  schedule: SystemScheduleRecord,
  run: RunRecord,
  signal: AbortSignal,
): Promise<string> {
  switch (schedule.action.job) {
    case 'weekly_rollup':
      return rollUpWeek(deps, run, signal);
  }
}
