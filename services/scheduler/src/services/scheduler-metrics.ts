import { Counter, Histogram, type Metrics } from '@jarvis/telemetry';
import type { RunRecord } from '../repositories/runs-repository';
import type { StoredSchedule } from '../repositories/schedules-repository';

export type SchedulerMetrics = {
  // An occurrence that ended (fired, failed, skipped or missed), counted by the one delivery or
  // claim that ended it.
  countRun(run: RunRecord, schedule: StoredSchedule): void;
};

// Seconds after its due time an occurrence fired: a reminder is due within a second, catch-up
// after downtime takes minutes to hours.
const LATENESS_BUCKETS = [0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 21600];

export function createSchedulerMetrics(metrics: Metrics): SchedulerMetrics {
  const registers = [metrics.registry];
  const occurrences = new Counter({
    name: 'jarvis_schedule_occurrences_total',
    help: 'Schedule occurrences ended, by action type (remind, prompt, mission, system) and status (fired, failed, skipped, missed).',
    labelNames: ['action_type', 'status'],
    registers,
  });
  const lateness = new Histogram({
    name: 'jarvis_schedule_fire_lateness_seconds',
    help: 'Time from an occurrence being due to its action having taken effect, for those fired.',
    labelNames: ['action_type'],
    buckets: LATENESS_BUCKETS,
    registers,
  });
  return {
    countRun(run, schedule) {
      const actionType = schedule.action.type;
      occurrences.inc({ action_type: actionType, status: run.status });
      if (run.status !== 'fired' || !run.finishedAt) return;
      const lateMs = run.finishedAt.getTime() - run.scheduledFor.getTime();
      lateness.observe({ action_type: actionType }, Math.max(lateMs, 0) / 1_000);
    },
  };
}
