import type { Schedule, ScheduleRun } from '@jarvis/contracts';
import type { RunRecord } from '../repositories/runs-repository';
import type { ScheduleRecord } from '../repositories/schedules-repository';
import { describeInstant } from '../rules';

// When the schedule is next due: its rule's next occurrence or a snooze, whichever comes first.
export function dueAt(schedule: ScheduleRecord): Date | null {
  const { nextRunAt, snoozeAt } = schedule;
  if (nextRunAt && snoozeAt) return nextRunAt < snoozeAt ? nextRunAt : snoozeAt;
  return nextRunAt ?? snoozeAt;
}

export function toSchedule(schedule: ScheduleRecord): Schedule {
  const { rule } = schedule;
  const next = schedule.status === 'ended' ? null : dueAt(schedule);
  return {
    id: schedule.id,
    kind: schedule.kind,
    name: schedule.name,
    action: schedule.action,
    at: rule.kind === 'once' ? rule.at.toISOString() : null,
    cron: rule.kind === 'cron' ? rule.cron : null,
    everyMinutes: rule.kind === 'interval' ? rule.everyMinutes : null,
    timeZone: schedule.timeZone,
    conversationId: schedule.conversationId,
    missedPolicy: schedule.missedPolicy,
    missedMaxRuns: schedule.missedMaxRuns,
    graceMinutes: schedule.graceMinutes,
    startAt: schedule.startAt?.toISOString() ?? null,
    endAt: schedule.endAt?.toISOString() ?? null,
    maxRuns: schedule.maxRuns,
    runCount: schedule.runCount,
    nextRunAt: next?.toISOString() ?? null,
    nextRunText: next ? describeInstant(next, schedule.timeZone) : null,
    status: schedule.status,
    createdBy: schedule.createdBy,
    createdAt: schedule.createdAt.toISOString(),
    updatedAt: schedule.updatedAt.toISOString(),
  };
}

export function toScheduleRun(run: RunRecord): ScheduleRun {
  return {
    id: run.id,
    scheduleId: run.scheduleId,
    scheduledFor: run.scheduledFor.toISOString(),
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    status: run.status,
    ...(run.messageId ? { messageId: run.messageId } : {}),
    ...(run.runId ? { runId: run.runId } : {}),
    ...(run.missionId ? { missionId: run.missionId } : {}),
    ...(run.reason ? { reason: run.reason } : {}),
  };
}
