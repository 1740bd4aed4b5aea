import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ScheduleRecord } from '../repositories/schedules-repository';
import { MAX_DUE_PER_CLAIM, type PlanContext, planClaim } from './plan-claim';

const HOUR = 3_600_000;
const NOW = new Date('2030-06-10T12:00:00Z');
const ago = (ms: number) => new Date(NOW.getTime() - ms);

// An hourly reminder whose cursor was left `downMs` ago: the scheduler was down since.
function hourly(
  overrides: Partial<ScheduleRecord> = {},
  downMs = 5 * HOUR + 120_000,
): ScheduleRecord {
  const first = ago(downMs);
  return {
    id: randomUUID(),
    userId: randomUUID(),
    kind: 'interval',
    name: null,
    action: { type: 'remind', text: 'stretch' },
    rule: { kind: 'interval', everyMinutes: 60, anchor: first },
    timeZone: 'UTC',
    conversationId: null,
    missedPolicy: 'run_once',
    missedMaxRuns: 10,
    graceMinutes: 150,
    startAt: first,
    endAt: null,
    maxRuns: null,
    runCount: 0,
    nextRunAt: first,
    snoozeAt: null,
    status: 'active',
    createdBy: 'user',
    sourceRunId: null,
    createdAt: first,
    updatedAt: first,
    ...overrides,
  };
}

const context = (overrides: Partial<PlanContext> = {}): PlanContext => ({
  now: NOW,
  missedAfterMs: 60_000,
  isPreviousRunActive: false,
  agentBudget: undefined,
  ...overrides,
});

// By default the occurrences were 5 h 2 min, 4 h 2 min, ... 2 min ago: three past the grace window
// of 150 minutes, three within it, and none on time (seen within a minute).
const summary = (plan: ReturnType<typeof planClaim>) =>
  plan.runs.map((run) => [run.status, run.reason]);

describe('planClaim after downtime', () => {
  it('skip: records every occurrence, runs none of the missed', () => {
    const plan = planClaim(hourly({ missedPolicy: 'skip' }), context());

    expect(summary(plan)).toEqual([
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['skipped', 'missed_skip_policy'],
      ['skipped', 'missed_skip_policy'],
      ['skipped', 'missed_skip_policy'],
    ]);
    expect(plan.advance).toEqual({
      nextRunAt: new Date(NOW.getTime() + HOUR - 120_000),
      snoozeAt: null,
      runCount: 0,
      status: 'active',
    });
  });

  it('run_once: one catch-up, the latest, for everything missed within the grace window', () => {
    const plan = planClaim(hourly({ missedPolicy: 'run_once' }), context());

    expect(summary(plan)).toEqual([
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['skipped', 'caught_up_by_later_run'],
      ['skipped', 'caught_up_by_later_run'],
      ['running', null],
    ]);
    expect(plan.runs.at(-1)?.scheduledFor).toEqual(ago(120_000));
    expect(plan.advance.runCount).toBe(1);
  });

  it('run_all: the latest missedMaxRuns of those within the grace window', () => {
    const plan = planClaim(hourly({ missedPolicy: 'run_all', missedMaxRuns: 2 }), context());

    expect(summary(plan)).toEqual([
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['missed', 'past_grace_window'],
      ['skipped', 'missed_max_runs'],
      ['running', null],
      ['running', null],
    ]);
    expect(plan.advance.runCount).toBe(2);
  });

  it('runs an occurrence on time whatever the policy', () => {
    for (const missedPolicy of ['skip', 'run_once', 'run_all'] as const) {
      const plan = planClaim(hourly({ missedPolicy }, 2_000), context());
      expect(summary(plan)).toEqual([['running', null]]);
    }
  });

  it('records an occurrence past a grace window of 0 as missed, even with run_all', () => {
    const plan = planClaim(
      hourly({ missedPolicy: 'run_all', graceMinutes: 0 }, 120_000),
      context(),
    );
    expect(summary(plan)).toEqual([['missed', 'past_grace_window']]);
    // A moment late is not missed: the grace window is for catch-up.
    const onTime = planClaim(hourly({ graceMinutes: 0 }, 30_000), context());
    expect(summary(onTime)).toEqual([['running', null]]);
  });
});

describe('planClaim limits', () => {
  it('ends the schedule when maxRuns is reached, and runs no more than it allows', () => {
    const plan = planClaim(
      hourly({ missedPolicy: 'run_all', graceMinutes: 600, maxRuns: 3, runCount: 1 }),
      context(),
    );

    // run_all catches up in order, the oldest first.
    expect(summary(plan)).toEqual([
      ['running', null],
      ['running', null],
      ['skipped', 'max_runs_reached'],
      ['skipped', 'max_runs_reached'],
      ['skipped', 'max_runs_reached'],
      ['skipped', 'max_runs_reached'],
    ]);
    expect(plan.advance).toMatchObject({ nextRunAt: null, runCount: 3, status: 'ended' });
  });

  it('ends a one-shot schedule after its occurrence', () => {
    const at = ago(1_000);
    const plan = planClaim(
      hourly({ kind: 'once', rule: { kind: 'once', at }, nextRunAt: at, startAt: null }),
      context(),
    );
    expect(summary(plan)).toEqual([['running', null]]);
    expect(plan.advance).toEqual({ nextRunAt: null, snoozeAt: null, runCount: 1, status: 'ended' });
  });

  it('skips agent work whose previous run is still going', () => {
    const plan = planClaim(
      hourly({ action: { type: 'prompt', instruction: 'brief me' } }, 2_000),
      context({ isPreviousRunActive: true, agentBudget: { remaining: 10 } }),
    );
    expect(summary(plan)).toEqual([['skipped', 'previous_run_active']]);
    expect(plan.advance.runCount).toBe(0);
  });

  it('starts at most one run of agent work per claim: the next would overlap it', () => {
    const budget = { remaining: 10 };
    const plan = planClaim(
      hourly({ action: { type: 'mission', objective: 'x' }, missedPolicy: 'run_all' }),
      context({ agentBudget: budget }),
    );
    expect(summary(plan).slice(-3)).toEqual([
      ['running', null],
      ['skipped', 'previous_run_active'],
      ['skipped', 'previous_run_active'],
    ]);
    expect(budget.remaining).toBe(9);
  });

  it('skips agent work past the daily cap at fire time', () => {
    const budget = { remaining: 0 };
    const plan = planClaim(
      hourly({ action: { type: 'prompt', instruction: 'x' } }, 2_000),
      context({ agentBudget: budget }),
    );
    expect(summary(plan)).toEqual([['skipped', 'daily_cap_reached']]);
  });

  it('writes at most MAX_DUE_PER_CLAIM occurrences and leaves the rest due', () => {
    const downMs = (MAX_DUE_PER_CLAIM + 500) * 60_000;
    const schedule = hourly(
      { rule: { kind: 'interval', everyMinutes: 1, anchor: ago(downMs) }, graceMinutes: 60 },
      downMs,
    );
    const plan = planClaim(schedule, context());

    expect(plan.runs).toHaveLength(MAX_DUE_PER_CLAIM);
    expect(plan.runs.every((run) => run.status === 'missed')).toBe(true);
    expect(plan.advance.nextRunAt?.getTime()).toBe(NOW.getTime() - 500 * 60_000);
  });
});

describe('planClaim snoozes', () => {
  it("runs a due snooze as an extra occurrence and keeps the rule's cursor", () => {
    const snoozeAt = ago(500);
    const schedule = hourly({ nextRunAt: new Date(NOW.getTime() + HOUR), snoozeAt, runCount: 4 });
    const plan = planClaim(schedule, context());

    expect(plan.runs).toEqual([{ scheduledFor: snoozeAt, status: 'running', reason: null }]);
    expect(plan.advance).toEqual({
      nextRunAt: schedule.nextRunAt,
      snoozeAt: null,
      runCount: 4,
      status: 'active',
    });
  });

  it('ends a one-shot reminder again once its snooze has fired', () => {
    const snoozeAt = ago(500);
    const at = ago(HOUR);
    const plan = planClaim(
      hourly({ kind: 'once', rule: { kind: 'once', at }, nextRunAt: null, snoozeAt, runCount: 1 }),
      context(),
    );
    expect(plan.runs).toHaveLength(1);
    expect(plan.advance.status).toBe('ended');
  });
});
