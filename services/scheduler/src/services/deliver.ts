import { type Bus, BusError, publishUserEvent } from '@jarvis/bus';
import { memoryAppend, orchestratorMissionsCreate, turnSubmit } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  GEN_AI,
  JARVIS,
  type Logger,
  type Span,
  SpanStatusCode,
  withSpan,
} from '@jarvis/telemetry';
import { v5 as uuidv5 } from 'uuid';
import { postponeRun, type RunOutcome, type RunRecord } from '../repositories/runs-repository';
import type { ScheduleRecord, StoredSchedule } from '../repositories/schedules-repository';
import type { RunFinisher } from './run-finisher';
import { dueAt, toScheduleRun } from './schedule-views';
import type { SchedulerMetrics } from './scheduler-metrics';
import { runSystemJob } from './system-jobs';
import { isTransient } from './transient-error';

// The one way an occurrence takes effect: its action, then the user's event, then the run marked
// fired. Each step is keyed by the run, so a delivery repeated after a crash anywhere in it (a
// lease taken over) has exactly one effect: memory keeps one message per idempotency key, the
// orchestrator one turn per turn id and one mission per key, and the event stream one event per
// message id. Notifications will hook in here, after the action. A system job (no user) is
// delivered here too, under the same lease and retry rules, and tells no user.

export type DeliveryDeps = {
  bus: Bus;
  pool: Pool;
  logger: Logger;
  // Counts each occurrence as it ends; none in tests that do not look at it.
  metrics?: SchedulerMetrics;
};
// What deliver() needs besides: the engine's one finisher, which writes runs finished together.
type Delivery = DeliveryDeps & { finisher: RunFinisher };

// Names prompt turns' ids (UUID version 5) after their run: any fixed UUID serves, and changing
// it would give a run delivered again across an upgrade a second turn.
const TURN_ID_NAMESPACE = '0b7f4c52-3f8e-4d0a-9c61-2e5a7d9b8f13';

// Tries within one delivery, for a service that is restarting; past them the run waits for its
// lease to end and any replica tries again, until the schedule's grace window is over.
const RETRY_DELAYS_MS = [250, 1_000];
const POSTPONE_BASE_MS = 5_000;
const POSTPONE_MAX_MS = 5 * 60_000;
const REQUEST_TIMEOUT_MS = 10_000;

type Produced = {
  conversationId: string;
  messageId?: string;
  runId?: string;
  missionId?: string;
};

export function idempotencyKeyOf(run: Pick<RunRecord, 'id'>): string {
  return `schedule-run:${run.id}`;
}

async function performAction(
  bus: Bus,
  schedule: ScheduleRecord,
  run: RunRecord,
): Promise<Produced> {
  const key = idempotencyKeyOf(run);
  const conversationId = schedule.conversationId ?? undefined;
  const options = { timeoutMs: REQUEST_TIMEOUT_MS };
  const { action } = schedule;
  if (action.type === 'remind') {
    const stored = await bus.request(
      memoryAppend,
      {
        userId: schedule.userId,
        conversationId,
        role: 'assistant',
        content: action.text,
        idempotencyKey: key,
        metadata: { scheduleId: schedule.id, scheduleRunId: run.id },
      },
      options,
    );
    return { conversationId: stored.message.conversationId, messageId: stored.message.id };
  }
  if (action.type === 'prompt') {
    const turn = await bus.request(
      turnSubmit,
      {
        userId: schedule.userId,
        conversationId,
        message: action.instruction,
        turnId: uuidv5(key, TURN_ID_NAMESPACE),
        idempotencyKey: key,
        timeZone: schedule.timeZone,
        scheduleId: schedule.id,
      },
      options,
    );
    return { conversationId: turn.conversationId, runId: turn.runId };
  }
  const { mission } = await bus.request(
    orchestratorMissionsCreate,
    {
      userId: schedule.userId,
      objective: action.objective,
      tasks: action.tasks,
      conversationId,
      createdBy: 'schedule',
      idempotencyKey: key,
      // Its tasks are told the time in the zone the schedule runs in.
      userTimeZone: schedule.timeZone,
    },
    options,
  );
  return { conversationId: mission.conversationId, missionId: mission.id };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function performWithRetries(
  bus: Bus,
  schedule: ScheduleRecord,
  run: RunRecord,
  signal: AbortSignal,
): Promise<Produced> {
  for (const delayMs of RETRY_DELAYS_MS) {
    try {
      return await performAction(bus, schedule, run);
    } catch (error) {
      if (!isTransient(error) || signal.aborted) throw error;
      await sleep(delayMs, signal);
    }
  }
  return performAction(bus, schedule, run);
}

// A delivery that did not take effect: tried again later while the service may come back within
// the grace window, failed for good otherwise.
async function settleFailure(
  deps: Delivery & { span?: Span },
  run: RunRecord,
  schedule: StoredSchedule,
  error: unknown,
  signal: AbortSignal,
): Promise<void> {
  const now = new Date();
  const graceEnds = run.scheduledFor.getTime() + schedule.graceMinutes * 60_000;
  if (isTransient(error) && (signal.aborted || now.getTime() < graceEnds)) {
    // Stopping: another replica (or this one, restarted) may take it at once.
    const waitMs = signal.aborted
      ? 0
      : Math.min(POSTPONE_BASE_MS * 2 ** (run.attempts - 1), POSTPONE_MAX_MS);
    deps.logger.warn({ err: error, runId: run.id, waitMs }, 'delivery postponed');
    await postponeRun(deps.pool, run.id, new Date(now.getTime() + waitMs));
    return;
  }
  const reason = error instanceof BusError ? `${error.code}: ${error.message}` : 'internal error';
  deps.logger.warn({ err: error, runId: run.id }, 'delivery failed');
  deps.span?.setAttribute(GEN_AI.errorType, error instanceof BusError ? error.code : 'internal');
  deps.span?.setStatus({ code: SpanStatusCode.ERROR });
  // Marked first, told after: only the delivery that finished the run tells it, so a failure is
  // never told of a run that a delivery repeated after a crash then fired (one message id per
  // run would keep that second event out).
  const failed = await deps.finisher.finish(run.id, { status: 'failed', reason }, now);
  if (failed) deps.metrics?.countRun(failed, schedule);
  if (failed && schedule.userId !== null) {
    await announceRun(deps.bus, schedule, failed, schedule.conversationId);
  }
}

// Delivers one claimed run. `signal` ends retries when the process stops: the run is then left
// to its lease. Each delivery is a fire_schedule span that starts a trace of its own (the timer
// that woke the engine may have been set inside another request's), and the turn or mission it
// submits continues that trace.
export function deliver(
  deps: Delivery,
  run: RunRecord,
  schedule: StoredSchedule,
  signal: AbortSignal,
): Promise<void> {
  return withSpan(
    'fire_schedule',
    {
      isRoot: true,
      attributes: {
        [JARVIS.scheduleId]: schedule.id,
        [JARVIS.scheduleActionType]: schedule.userId === null ? 'system' : schedule.action.type,
        [JARVIS.scheduleLatenessMs]: Math.max(Date.now() - run.scheduledFor.getTime(), 0),
        'jarvis.schedule.run.id': run.id,
        'jarvis.schedule.attempt': run.attempts,
      },
    },
    (span) => deliverInSpan({ ...deps, span }, run, schedule, signal),
  );
}

async function deliverInSpan(
  deps: Delivery & { span: Span },
  run: RunRecord,
  schedule: StoredSchedule,
  signal: AbortSignal,
): Promise<void> {
  if (schedule.userId === null) {
    let reason: string;
    try {
      // Not retried at once: a job waits on the utility model, which is better asked again
      // after the postponement than three times in a row.
      reason = await runSystemJob(deps, schedule, run, signal);
    } catch (error) {
      await settleFailure(deps, run, schedule, error, signal);
      return;
    }
    const fired = await deps.finisher.finish(run.id, { status: 'fired', reason }, new Date());
    if (fired) deps.metrics?.countRun(fired, schedule);
    return;
  }
  let produced: Produced;
  try {
    produced = await performWithRetries(deps.bus, schedule, run, signal);
  } catch (error) {
    await settleFailure(deps, run, schedule, error, signal);
    return;
  }
  const finishedAt = new Date();
  const outcome: RunOutcome = {
    status: 'fired',
    messageId: produced.messageId,
    runId: produced.runId,
    missionId: produced.missionId,
  };
  const fired: RunRecord = {
    ...run,
    status: 'fired',
    finishedAt,
    messageId: produced.messageId ?? null,
    runId: produced.runId ?? null,
    missionId: produced.missionId ?? null,
  };
  // Before the run is marked fired: a crash in between delivers again, and the event's message
  // id keeps the stream from holding it twice.
  await announceRun(deps.bus, schedule, fired, produced.conversationId);
  // Counted only by the delivery that marked it (not one repeated after a crash).
  const marked = await deps.finisher.finish(run.id, outcome, finishedAt);
  if (marked) deps.metrics?.countRun(marked, schedule);
}

// Tells the user how an occurrence ended, whatever the outcome (run.status: fired, failed,
// skipped or missed). The message id is the run's key: a run has one outcome, and telling it
// again (a delivery repeated after a crash) adds nothing to the stream. `conversationId`: where
// the action went, or the one the schedule names (null: the user's persistent conversation).
export function announceRun(
  bus: Bus,
  schedule: ScheduleRecord,
  run: RunRecord,
  conversationId: string | null,
): Promise<void> {
  return publishUserEvent(bus, schedule.userId, idempotencyKeyOf(run), {
    type: 'schedule_fired',
    occurredAt: (run.finishedAt ?? new Date()).toISOString(),
    schedule: {
      id: schedule.id,
      name: schedule.name,
      kind: schedule.kind,
      actionType: schedule.action.type,
      nextRunAt: schedule.status === 'ended' ? null : (dueAt(schedule)?.toISOString() ?? null),
    },
    run: toScheduleRun(run),
    ...(conversationId ? { conversationId } : {}),
    ...(schedule.action.type === 'remind' ? { text: schedule.action.text } : {}),
  });
}
