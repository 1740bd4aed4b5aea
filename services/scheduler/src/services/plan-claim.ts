import type { ScheduleAdvance, StoredSchedule } from '../repositories/schedules-repository';
import { occurrenceAfter } from './occurrences';

// What a claim does with one due schedule: each due occurrence becomes a run (to deliver now,
// or recorded skipped or missed with its reason), and the schedule's cursor moves past them.
// Pure: the engine gives it the time and what it found out (the previous run, the daily cap).

type PlannedRun = {
  scheduledFor: Date;
  status: 'running' | 'skipped' | 'missed';
  reason: string | null;
};

export type Plan = { runs: PlannedRun[]; advance: ScheduleAdvance };

export type PlanContext = {
  now: Date;
  // An occurrence first seen later than this after its time was missed (the scheduler was
  // down), and the missed policy decides; one seen sooner is simply on time.
  missedAfterMs: number;
  // Agent work only: the schedule's previous turn or mission is still going.
  isPreviousRunActive: boolean;
  // Agent work only: runs the user's schedules may still start in this 24 hours, shared by the
  // user's schedules of one claim (taken from as runs are planned).
  agentBudget: { remaining: number } | undefined;
};

// An every-minute rule after a week's downtime has 10,080 occurrences: a claim writes at most
// this many of one schedule and leaves the rest due for the next claim, a moment later.
export const MAX_DUE_PER_CLAIM = 1_000;

const REASONS = {
  pastGrace: 'past_grace_window',
  skipPolicy: 'missed_skip_policy',
  caughtUp: 'caught_up_by_later_run',
  missedMaxRuns: 'missed_max_runs',
  maxRuns: 'max_runs_reached',
  previousActive: 'previous_run_active',
  dailyCap: 'daily_cap_reached',
} as const;

type Decision = { scheduledFor: Date; runs: boolean; reason: string | null; isMissed: boolean };

export function planClaim(schedule: StoredSchedule, context: PlanContext): Plan {
  const { now } = context;
  const due: Date[] = [];
  let cursor = schedule.nextRunAt;
  while (cursor && cursor <= now && due.length < MAX_DUE_PER_CLAIM) {
    due.push(cursor);
    cursor = occurrenceAfter(schedule, cursor);
  }
  // More are due than one claim takes: every one here has a later one, which the policies
  // prefer, so none of these runs. Only a rule of minutes with a grace window of days gets here.
  const hasMoreDue = cursor !== null && cursor <= now;
  const graceMs = schedule.graceMinutes * 60_000;
  const isInGrace = (instant: Date) => now.getTime() - instant.getTime() <= graceMs;
  const latest = due.at(-1);
  const onTime =
    !hasMoreDue && latest && now.getTime() - latest.getTime() <= context.missedAfterMs
      ? latest
      : undefined;

  // The policy's choice: an occurrence on time always runs (the grace window is for catch-up, not
  // for a moment's lateness), missed ones within the grace window as the policy says.
  const inGrace = due.filter(isInGrace);
  const chosen = new Set<Date>();
  if (!hasMoreDue) {
    if (schedule.missedPolicy === 'run_once') {
      if (latest && (latest === onTime || isInGrace(latest))) chosen.add(latest);
    } else {
      if (onTime) chosen.add(onTime);
      if (schedule.missedPolicy === 'run_all') {
        const missed = inGrace.filter((instant) => instant !== onTime);
        for (const instant of missed.slice(-schedule.missedMaxRuns)) chosen.add(instant);
      }
    }
  }
  const decisions: Decision[] = due.map((instant) => {
    if (chosen.has(instant))
      return { scheduledFor: instant, runs: true, reason: null, isMissed: false };
    if (!isInGrace(instant)) {
      return { scheduledFor: instant, runs: false, reason: REASONS.pastGrace, isMissed: true };
    }
    const reason =
      schedule.missedPolicy === 'skip'
        ? REASONS.skipPolicy
        : schedule.missedPolicy === 'run_once'
          ? REASONS.caughtUp
          : REASONS.missedMaxRuns;
    return { scheduledFor: instant, runs: false, reason, isMissed: false };
  });

  const runs: PlannedRun[] = [];
  let started = 0;
  let isPreviousActive = context.isPreviousRunActive;
  for (const decision of decisions) {
    if (!decision.runs) {
      runs.push({
        scheduledFor: decision.scheduledFor,
        status: decision.isMissed ? 'missed' : 'skipped',
        reason: decision.reason,
      });
      continue;
    }
    const reason = whyNotStart(schedule, started, isPreviousActive, context.agentBudget);
    if (reason) {
      runs.push({ scheduledFor: decision.scheduledFor, status: 'skipped', reason });
      continue;
    }
    runs.push({ scheduledFor: decision.scheduledFor, status: 'running', reason: null });
    started += 1;
    // The run just started is the previous run of the next occurrence: agent work never
    // overlaps itself, catch-ups included.
    if (context.agentBudget) {
      context.agentBudget.remaining -= 1;
      isPreviousActive = true;
    }
  }

  // A snoozed reminder's extra occurrence, unless the rule has one at the same instant.
  const { snoozeAt } = schedule;
  const isSnoozeDue =
    snoozeAt !== null &&
    snoozeAt <= now &&
    !due.some((instant) => instant.getTime() === snoozeAt.getTime());
  if (snoozeAt && isSnoozeDue) {
    runs.push(
      isInGrace(snoozeAt)
        ? { scheduledFor: snoozeAt, status: 'running', reason: null }
        : { scheduledFor: snoozeAt, status: 'missed', reason: REASONS.pastGrace },
    );
  }

  const runCount = schedule.runCount + started;
  const isCountReached = schedule.maxRuns !== null && runCount >= schedule.maxRuns;
  const nextRunAt = isCountReached ? null : cursor;
  const nextSnoozeAt = snoozeAt && snoozeAt <= now ? null : snoozeAt;
  return {
    runs,
    advance: {
      nextRunAt,
      snoozeAt: nextSnoozeAt,
      runCount,
      status: nextRunAt || nextSnoozeAt ? 'active' : 'ended',
    },
  };
}

function whyNotStart(
  schedule: StoredSchedule,
  started: number,
  isPreviousActive: boolean,
  agentBudget: PlanContext['agentBudget'],
): string | undefined {
  if (schedule.maxRuns !== null && schedule.runCount + started >= schedule.maxRuns) {
    return REASONS.maxRuns;
  }
  if (!agentBudget) return undefined;
  if (isPreviousActive) return REASONS.previousActive;
  if (agentBudget.remaining <= 0) return REASONS.dailyCap;
  return undefined;
}
