import { baseEnvShape, databaseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Minutes = z.coerce.number().int().min(0);
const Count = z.coerce.number().int().min(1);
const Ms = z.coerce.number().int().min(1);

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8085),
  // Schedules one user may have that have not ended (active or paused).
  SCHEDULER_MAX_SCHEDULES_PER_USER: Count.default(500),
  // Runs of agent work (prompt, mission) one user's schedules may start in any 24 hours: checked
  // when a schedule is made or changed (with what its rule can fire) and again at fire time.
  SCHEDULER_AGENT_RUNS_PER_DAY: Count.default(50),
  // Shortest time between two runs of one schedule's agent work.
  SCHEDULER_AGENT_MIN_INTERVAL_MINUTES: Minutes.default(15),
  // How late a missed reminder may still come (a schedule's graceMinutes overrides it).
  SCHEDULER_REMINDER_GRACE_MINUTES: Minutes.default(12 * 60),
  // The same for agent work: a briefing hours late is rarely what was wanted.
  SCHEDULER_AGENT_GRACE_MINUTES: Minutes.default(60),
  // Missed occurrences a run_all schedule runs at most (a schedule's missedMaxRuns overrides it).
  SCHEDULER_MISSED_MAX_RUNS: Count.default(10),
  // An occurrence the scheduler first sees later than this after its time was missed (the
  // scheduler was down): the schedule's missed policy decides whether it runs.
  SCHEDULER_MISSED_AFTER_MS: Ms.default(60_000),
  // How long a claimed run is its process's to deliver; past it another process takes it over
  // (the first one died) and delivers it again under the same idempotency key.
  SCHEDULER_LEASE_MS: Ms.default(30_000),
  // Deliveries one process runs at once.
  SCHEDULER_DELIVERY_CONCURRENCY: Count.default(32),
  // Longest the engine sleeps without looking at the table, should a change's wake-up be lost.
  SCHEDULER_MAX_SLEEP_MS: Ms.default(60_000),
  // Catch-up after a start (runs due before the process started) is spread over this long, so
  // that a scheduler back after downtime does not send every service a burst at once.
  SCHEDULER_CATCH_UP_SPREAD_MS: z.coerce.number().int().min(0).default(5_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
