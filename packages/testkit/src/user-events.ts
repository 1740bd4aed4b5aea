import { randomUUID } from 'node:crypto';
import type { UserEvent } from '@jarvis/contracts';

// What a scheduler replica publishes when a reminder's run has fired (announceRun), with the
// message id it gives it: the run's key, which the notification pipeline deduplicates on.
export function reminderFired(text: string): { id: string; event: UserEvent } {
  const scheduleId = randomUUID();
  const runId = randomUUID();
  const at = new Date().toISOString();
  return {
    id: `schedule-run:${runId}`,
    event: {
      type: 'schedule_fired',
      occurredAt: at,
      schedule: { id: scheduleId, name: null, kind: 'once', actionType: 'remind', nextRunAt: null },
      run: {
        id: runId,
        scheduleId,
        scheduledFor: at,
        startedAt: at,
        finishedAt: at,
        status: 'fired',
      },
      text,
    },
  };
}

// What the orchestrator publishes when a mission has ended with its report.
export function missionEnded(report: string): UserEvent {
  return {
    type: 'mission_updated',
    occurredAt: new Date().toISOString(),
    mission: {
      id: randomUUID(),
      objective: 'Find a flat',
      status: 'completed',
      conversationId: randomUUID(),
    },
    change: 'ended',
    reportMessageId: randomUUID(),
    report,
  };
}
