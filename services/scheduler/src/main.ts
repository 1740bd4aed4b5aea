import { ensureUserEventStream } from '@jarvis/bus';
import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';
import { startEngine } from './services/engine';
import { createSchedulerMetrics } from './services/scheduler-metrics';
import { ensureSystemSchedules } from './services/system-jobs';

const env = loadEnv();

await bootService(
  {
    name: 'scheduler',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'scheduler',
      migrations: new URL('../migrations', import.meta.url),
    },
  },
  async ({ bus, pool, logger, metrics }) => {
    // Before the first delivery publishes a schedule_fired event to it.
    await ensureUserEventStream(bus);
    registerHandlers({
      bus,
      pool,
      limits: {
        maxSchedulesPerUser: env.SCHEDULER_MAX_SCHEDULES_PER_USER,
        agentRunsPerDay: env.SCHEDULER_AGENT_RUNS_PER_DAY,
        agentMinIntervalMinutes: env.SCHEDULER_AGENT_MIN_INTERVAL_MINUTES,
        reminderGraceMinutes: env.SCHEDULER_REMINDER_GRACE_MINUTES,
        agentGraceMinutes: env.SCHEDULER_AGENT_GRACE_MINUTES,
        missedMaxRuns: env.SCHEDULER_MISSED_MAX_RUNS,
      },
    });
    // Before the engine's first tick, so that a roll-up missed while it was down is caught up.
    await ensureSystemSchedules(pool);
    // Started once the bus and the migrated pool are there: its first tick is the catch-up.
    const engine = startEngine(
      { bus, pool, logger, metrics: createSchedulerMetrics(metrics) },
      {
        leaseMs: env.SCHEDULER_LEASE_MS,
        concurrency: env.SCHEDULER_DELIVERY_CONCURRENCY,
        maxSleepMs: env.SCHEDULER_MAX_SLEEP_MS,
        missedAfterMs: env.SCHEDULER_MISSED_AFTER_MS,
        catchUpSpreadMs: env.SCHEDULER_CATCH_UP_SPREAD_MS,
        agentRunsPerDay: env.SCHEDULER_AGENT_RUNS_PER_DAY,
      },
    );
    // Deliveries in hand finish (and what has not started is released) before the bus closes.
    return { stop: () => engine.stop() };
  },
);
