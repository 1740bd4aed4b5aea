import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import {
  type MissionStatus,
  orchestratorMissionsGet,
  orchestratorRunsGet,
  type RunStatus,
  schedulesChanged,
} from '@jarvis/contracts';
import { withTransaction } from '@jarvis/db';
import {
  countAgentRunsSince,
  extendLeases,
  findLatestStartedRuns,
  insertRuns,
  type NewRun,
  postponeRun,
  type RunRecord,
  takeOverExpiredRuns,
} from '../repositories/runs-repository';
import {
  advanceSchedules,
  findDueAgentSchedules,
  findNextWake,
  findSchedulesByIds,
  lockDueSchedules,
  lockUsersAgentWork,
  type ScheduleAdvance,
  type ScheduleRecord,
  type StoredSchedule,
} from '../repositories/schedules-repository';
import { announceRun, type DeliveryDeps, deliver } from './deliver';
import { DeliveryQueue } from './delivery-queue';
import { forEachBounded } from './for-each-bounded';
import { planClaim } from './plan-claim';
import { createRunFinisher } from './run-finisher';
import { isAgentWork } from './schedule-service';

// The engine: sleeps until the earliest due time (or a lease's end), claims what is due in
// transactions that lock the schedules with SKIP LOCKED, writes a run per occurrence before its
// action starts, and delivers the runs it claimed. Any number of replicas can run it on one
// database: a claim takes each occurrence once, and a run whose process died is taken over when
// its lease ends and delivered again under the same idempotency key. A live process keeps the
// leases of the runs it holds (queued behind a burst, or slow to deliver) until it delivers
// them, so that no other replica delivers them a second time.

export type EngineSettings = {
  leaseMs: number;
  concurrency: number;
  maxSleepMs: number;
  missedAfterMs: number;
  catchUpSpreadMs: number;
  agentRunsPerDay: number;
};

export type Engine = { stop(): Promise<void> };

type Claimed = { run: RunRecord; schedule: StoredSchedule };
// A run a claim wrote finished (skipped, missed) of a user's schedule: told to the user.
type Finished = { run: RunRecord; schedule: ScheduleRecord };

// Schedules locked per claim transaction, and runs taken over per statement.
const CLAIM_BATCH = 200;
const DAY_MS = 24 * 3600_000;
// After a failed look at the database (Postgres restarting, say).
const RETRY_AFTER_ERROR_MS = 2_000;
const ORCHESTRATOR_TIMEOUT_MS = 2_000;
// Events of skipped and missed runs published at once (a catch-up after long downtime can
// record hundreds).
const ANNOUNCE_CONCURRENCY = 16;
// The leases of held runs are renewed this often within a lease: a renewal may be late by the
// rest of the lease (an event loop held up, a slow database) before another replica takes over.
const RENEWALS_PER_LEASE = 4;
const ACTIVE_RUN: ReadonlySet<RunStatus> = new Set(['queued', 'running', 'waiting_approval']);
const ACTIVE_MISSION: ReadonlySet<MissionStatus> = new Set(['planning', 'running', 'reporting']);

// Whether the turn or mission a schedule's previous run started is still going. Unknown (the
// orchestrator unreachable, the run forgotten) counts as ended: an outage must not silently
// skip work that may well run.
async function isStillGoing(bus: Bus, run: RunRecord): Promise<boolean> {
  // Its delivery has not finished (it may be waiting for the orchestrator to come back).
  if (run.status === 'running') return true;
  // Only agent work asks, and it has a user.
  if (run.userId === null) return false;
  const options = { timeoutMs: ORCHESTRATOR_TIMEOUT_MS };
  try {
    if (run.runId) {
      const found = await bus.request(
        orchestratorRunsGet,
        { userId: run.userId, id: run.runId },
        options,
      );
      return ACTIVE_RUN.has(found.run.status);
    }
    if (run.missionId) {
      const found = await bus.request(
        orchestratorMissionsGet,
        { userId: run.userId, id: run.missionId },
        options,
      );
      return ACTIVE_MISSION.has(found.mission.status);
    }
  } catch (error) {
    bus.logger.warn({ err: error, scheduleRunId: run.id }, 'could not tell if a run still goes');
  }
  return false;
}

// The due agent work whose previous turn or mission still goes. Asked before the claim's
// transaction, not inside it: on the embedded Postgres, which runs one transaction at a time,
// every service's queries (the orchestrator's answer among them) would wait for that transaction.
async function findBusySchedules(deps: DeliveryDeps, now: Date): Promise<Set<string>> {
  const due = await findDueAgentSchedules(deps.pool, now, CLAIM_BATCH);
  if (due.length === 0) return new Set();
  const latest = await findLatestStartedRuns(
    deps.pool,
    due.map((schedule) => schedule.id),
  );
  const going = await Promise.all(latest.map((run) => isStillGoing(deps.bus, run)));
  return new Set(latest.filter((_, index) => going[index]).map((run) => run.scheduleId));
}

// One claim: the due schedules of this moment (at most a batch), locked; their occurrences
// planned and written; their cursors moved on. Returns how many schedules it locked, the runs
// to deliver and the runs it wrote finished.
async function claimDue(
  deps: DeliveryDeps,
  settings: EngineSettings,
  now: Date,
): Promise<{ locked: number; claimed: Claimed[]; finished: Finished[] }> {
  const busy = await findBusySchedules(deps, now);
  return withTransaction(deps.pool, async (client) => {
    const schedules = await lockDueSchedules(client, now, CLAIM_BATCH);
    if (schedules.length === 0) return { locked: 0, claimed: [], finished: [] };
    const agentWork = schedules.filter(isAgentWork);
    const users = [...new Set(agentWork.map((schedule) => schedule.userId))];
    // The daily cap holds across replicas claiming one user's schedules at once.
    await lockUsersAgentWork(client, users);
    const started = await countAgentRunsSince(client, users, new Date(now.getTime() - DAY_MS));
    const budgets = new Map(
      users.map((user) => [
        user,
        { remaining: settings.agentRunsPerDay - (started.get(user) ?? 0) },
      ]),
    );
    const runs: NewRun[] = [];
    const advances: Array<ScheduleAdvance & { id: string }> = [];
    const advanced = new Map<string, StoredSchedule>();
    for (const schedule of schedules) {
      const plan = planClaim(schedule, {
        now,
        missedAfterMs: settings.missedAfterMs,
        isPreviousRunActive: busy.has(schedule.id),
        agentBudget: isAgentWork(schedule) ? budgets.get(schedule.userId) : undefined,
      });
      for (const run of plan.runs) {
        runs.push({ id: randomUUID(), scheduleId: schedule.id, userId: schedule.userId, ...run });
      }
      advances.push({ id: schedule.id, ...plan.advance });
      advanced.set(schedule.id, { ...schedule, ...plan.advance });
    }
    const inserted = await insertRuns(client, runs, now, leaseEnd(settings, now));
    await advanceSchedules(client, advances);
    const claimed = inserted.flatMap((run) => {
      const schedule = advanced.get(run.scheduleId);
      return run.status === 'running' && schedule ? [{ run, schedule }] : [];
    });
    const finished = inserted.flatMap((run) => {
      const schedule = advanced.get(run.scheduleId);
      return run.status !== 'running' && schedule && schedule.userId !== null
        ? [{ run, schedule }]
        : [];
    });
    return { locked: schedules.length, claimed, finished };
  });
}

// Catch-up deliveries wait up to the spread before they start: the lease covers that too.
function leaseEnd(settings: EngineSettings, now: Date): Date {
  return new Date(now.getTime() + settings.leaseMs + settings.catchUpSpreadMs);
}

export function startEngine(deps: DeliveryDeps, settings: EngineSettings): Engine {
  const startedAt = Date.now();
  const stopping = new AbortController();
  const delivery = { ...deps, finisher: createRunFinisher(deps.pool) };
  const queue = new DeliveryQueue<Claimed>(
    settings.concurrency,
    ({ run, schedule }) => deliver(delivery, run, schedule, stopping.signal),
    deps.logger,
  );
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> = Promise.resolve();
  let isRenewing = false;

  // A claim of a burst larger than what the queue delivers within a lease would otherwise leave
  // its last runs past their lease, to be taken over and delivered again by another replica. A
  // run this process no longer holds (taken over while this one was stalled) is not delivered
  // here; one already being delivered finishes, and marking it done twice changes nothing.
  const renewLeases = async () => {
    const held = queue.held();
    if (held.length === 0) return;
    const runs = held.map(({ item }) => ({ id: item.run.id, attempts: item.run.attempts }));
    try {
      const kept = await extendLeases(deps.pool, runs, leaseEnd(settings, new Date()));
      const dropped = queue.drop(held.filter(({ id }) => !kept.has(id)).map(({ id }) => id));
      if (dropped > 0) deps.logger.warn({ dropped }, 'claimed runs taken over before delivery');
    } catch (error) {
      deps.logger.warn({ err: error }, 'could not renew the leases of claimed runs');
    }
  };
  // Armed only while the queue holds runs: an idle scheduler wakes for nothing.
  let renewal: NodeJS.Timeout | undefined;
  const keepLeases = () => {
    if (renewal || stopping.signal.aborted) return;
    renewal = setInterval(
      () => {
        if (queue.held().length === 0) {
          clearInterval(renewal);
          renewal = undefined;
          return;
        }
        if (isRenewing) return;
        isRenewing = true;
        renewing = renewLeases().finally(() => {
          isRenewing = false;
        });
      },
      Math.max(1, settings.leaseMs / RENEWALS_PER_LEASE),
    );
  };
  let plannedAt = Number.POSITIVE_INFINITY;
  let isTicking = false;
  let isTickAgain = false;
  let ticking: Promise<void> = Promise.resolve();

  // Runs due before this process started are catch-up: spread over the window, in order.
  const enqueue = (claimed: Claimed[]) => {
    if (claimed.length > 0) keepLeases();
    const catchUp = claimed.filter(({ run }) => run.scheduledFor.getTime() < startedAt);
    catchUp.forEach((entry, index) => {
      const delayMs = (settings.catchUpSpreadMs * index) / catchUp.length;
      queue.push({ id: entry.run.id, item: entry }, delayMs);
    });
    for (const entry of claimed) {
      if (entry.run.scheduledFor.getTime() >= startedAt) {
        queue.push({ id: entry.run.id, item: entry });
      }
    }
  };

  const takeOver = async (now: Date) => {
    for (;;) {
      const taken = (
        await takeOverExpiredRuns(deps.pool, now, leaseEnd(settings, now), CLAIM_BATCH)
      ).filter((run) => !queue.has(run.id));
      const schedules = await findSchedulesByIds(
        deps.pool,
        taken.map((run) => run.scheduleId),
      );
      enqueue(
        taken.flatMap((run) => {
          const schedule = schedules.get(run.scheduleId);
          return schedule ? [{ run, schedule }] : [];
        }),
      );
      if (taken.length < CLAIM_BATCH) return;
    }
  };

  const tick = async () => {
    const now = new Date();
    await takeOver(now);
    for (;;) {
      await queue.waitBelow(CLAIM_BATCH);
      if (stopping.signal.aborted) return;
      const { locked, claimed, finished } = await claimDue(deps, settings, now);
      enqueue(claimed);
      for (const { run, schedule } of finished) deps.metrics?.countRun(run, schedule);
      // After the claim commits, never for runs it might not write. A crash before this loses
      // these events (the runs' history keeps them); a fired run's event is told before the run
      // is marked, so it is not lost.
      await forEachBounded(finished, ANNOUNCE_CONCURRENCY, ({ run, schedule }) =>
        announceRun(deps.bus, schedule, run, schedule.conversationId),
      );
      if (locked < CLAIM_BATCH) return;
    }
  };

  const wakeAt = (at: number) => {
    if (stopping.signal.aborted || at >= plannedAt) return;
    clearTimeout(timer);
    plannedAt = at;
    timer = setTimeout(onTimer, Math.max(0, at - Date.now()));
  };

  const runTicks = async () => {
    try {
      do {
        isTickAgain = false;
        await tick();
      } while (isTickAgain && !stopping.signal.aborted);
      const next = await findNextWake(deps.pool);
      const nextAt = next?.getTime() ?? Number.POSITIVE_INFINITY;
      // A wake-up that came while the next time was read may be for a change it did not see.
      wakeAt(isTickAgain ? Date.now() : Math.min(nextAt, Date.now() + settings.maxSleepMs));
    } catch (error) {
      deps.logger.error({ err: error }, 'scheduler tick failed');
      wakeAt(Date.now() + RETRY_AFTER_ERROR_MS);
    }
  };

  function onTimer() {
    timer = undefined;
    plannedAt = Number.POSITIVE_INFINITY;
    // A wake-up during a tick asks for another tick right after it.
    if (isTicking) {
      isTickAgain = true;
      return;
    }
    isTicking = true;
    ticking = runTicks().finally(() => {
      isTicking = false;
    });
  }

  // Published after a change commits, so the next tick's claim sees it.
  const subscription = deps.bus.subscribe(
    schedulesChanged.subject,
    schedulesChanged.payload,
    ({ nextRunAt }) => {
      if (nextRunAt) wakeAt(Date.parse(nextRunAt));
    },
  );
  // The first tick is the catch-up of what came due while no scheduler ran.
  wakeAt(Date.now());

  return {
    async stop() {
      stopping.abort();
      subscription.unsubscribe();
      clearTimeout(timer);
      await ticking;
      // Before the runs not started are released: a renewal after it would hold them again.
      clearInterval(renewal);
      await renewing;
      const left = await queue.stop();
      // What was claimed but not started is free for another replica at once, instead of at the
      // end of its lease.
      const now = new Date();
      await Promise.all(left.map(({ id }) => postponeRun(deps.pool, id, now)));
    },
  };
}
