import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type SchedulesCreateRequest, schedulerSchedulesCreate } from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { z } from 'zod';
import { prepareBenchStack } from '../bench-stack';
import { RESULTS_DIR } from '../paths';
import { percentiles } from '../percentiles';
import { cpuMsPerTurn, readCpuSeconds } from '../proc';
import { SCHEDULES_PER_USER, userSchedules, userTimeZone } from './mix';
import { cpuBetween, readProcessCpu } from './process-cpu';

// `make bench` (scheduler): 10,000 active schedules over 100 users, then a burst of 1,000
// one-shot reminders due in the same second. Firing lateness of the burst (when each reminder
// took effect, its message's created_at in memory, and when its run was finished, less the
// time it was scheduled for), and the scheduler's CPU per hour while nothing is due. The
// scheduler and memory (which receives the reminders through memory.messages.append) run as
// their own processes from their main.ts, with production's settings; the bench speaks their
// bus contracts and reads the rows they wrote.

const Settings = z.object({
  // A PostgreSQL server; the bench makes a database of its own there and drops it at the end.
  // Without it, the embedded one (PGlite in the bench's process).
  DATABASE_URL: z.string().url().optional(),
  // Length of the idle window; with nothing due the engine wakes once a minute.
  BENCH_IDLE_SECONDS: z.coerce.number().int().min(10).default(120),
  // Users, each with the standing mix of mix.ts (100 schedules), and the reminders of the burst.
  BENCH_USERS: z.coerce.number().int().min(1).default(100),
  BENCH_BURST: z.coerce.number().int().min(1).default(1_000),
  // A folder where scheduler and memory write CPU profiles when the bench ends (the profiler's
  // own sampling then dominates the idle figure).
  BENCH_CPU_PROF: z.string().min(1).optional(),
});
const settings = Settings.parse(process.env);
// SCHEDULER_* settings of the bench's environment go to the scheduler as they are (its
// SCHEDULER_DELIVERY_CONCURRENCY, say); production's defaults otherwise.
const schedulerEnv = Object.fromEntries(
  Object.entries(process.env).flatMap(([name, value]) =>
    name.startsWith('SCHEDULER_') && value !== undefined ? [[name, value]] : [],
  ),
);
const RESULTS = resolve(RESULTS_DIR, 'scheduler.json');
// Creation requests in flight at once: the scheduler's pool, not the bench, sets the pace.
const CREATE_CONCURRENCY = 25;
// The standing schedules must not fall due before the bench is over.
const QUIET_MARGIN_MS = 30 * 60_000;

// Creates every schedule through scheduler.schedules.create, as the API and the agent tools do,
// so next_run_at and every other column are the service's own; returns their ids in order.
async function createAll(bus: Bus, requests: SchedulesCreateRequest[]): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < requests.length; start += CREATE_CONCURRENCY) {
    const made = await Promise.all(
      requests
        .slice(start, start + CREATE_CONCURRENCY)
        .map((request) => bus.request(schedulerSchedulesCreate, request, { timeoutMs: 30_000 })),
    );
    ids.push(...made.map(({ schedule }) => schedule.id));
  }
  return ids;
}

const { database, namespace, stack } = await prepareBenchStack(
  'bench-scheduler',
  ['memory', 'scheduler'],
  {
    env: schedulerEnv,
    ...(settings.BENCH_CPU_PROF
      ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${settings.BENCH_CPU_PROF}`] }
      : {}),
  },
);
let bus: Bus | undefined;

try {
  await stack.start();
  bus = await connectTestBus(namespace);
  const scheduler = stack.process('scheduler');
  const memory = stack.process('memory');
  if (!scheduler || !memory) throw new Error('the stack has no scheduler or memory process');
  const schedulerMetrics = `${stack.serviceUrl('scheduler')}/metrics`;
  const memoryMetrics = `${stack.serviceUrl('memory')}/metrics`;
  const pool = database.pool;
  const load = loadavg().map((value) => Math.round(value * 100) / 100);

  // 1. The standing schedules.
  const users = Array.from({ length: settings.BENCH_USERS }, () => randomUUID());
  const setupAt = new Date();
  const standing = users.flatMap((userId, index) =>
    userSchedules(index, setupAt).map((schedule) => ({
      userId,
      userTimeZone: userTimeZone(index),
      schedule,
    })),
  );
  const setupStarted = performance.now();
  await createAll(bus, standing);
  const setupSeconds = (performance.now() - setupStarted) / 1000;
  const createsPerSecond = Math.round(standing.length / setupSeconds);
  process.stdout.write(
    `${standing.length} schedules for ${users.length} users (${SCHEDULES_PER_USER} each) made through scheduler.schedules.create in ${setupSeconds.toFixed(1)} s (${createsPerSecond}/s)\n`,
  );
  // The due time over every active schedule, the scheduler's own system jobs included.
  const { rows: quiet } = await pool.query<{ active: number; due: Date }>(
    `SELECT count(*) FILTER (WHERE user_id = ANY($1))::int AS active,
            min(LEAST(next_run_at, snooze_at)) AS due
       FROM scheduler.schedules WHERE status = 'active'`,
    [users],
  );
  const firstDue = quiet[0]?.due;
  if (quiet[0]?.active !== standing.length || !firstDue) {
    throw new Error(`expected ${standing.length} active schedules, found ${quiet[0]?.active}`);
  }
  if (firstDue.getTime() < Date.now() + QUIET_MARGIN_MS) {
    throw new Error(`a standing schedule falls due during the bench, at ${firstDue.toISOString()}`);
  }

  // 2. Idle: nothing due, the engine sleeping between its wake-ups. V8 goes on collecting the
  // creations' garbage for a while after them, which is not the idle cost.
  await sleep(30_000);
  const idleFrom = await readProcessCpu(scheduler, schedulerMetrics);
  const memoryIdleFrom = await readProcessCpu(memory, memoryMetrics);
  const idleStarted = performance.now();
  await sleep(settings.BENCH_IDLE_SECONDS * 1000);
  const idle = await cpuBetween(scheduler, schedulerMetrics, idleFrom);
  const memoryIdle = await cpuBetween(memory, memoryMetrics, memoryIdleFrom);
  const idleHours = (performance.now() - idleStarted) / 3_600_000;
  const perIdleHour = (seconds: number) => Math.round((seconds / idleHours) * 1000) / 1000;
  const idleFigures = {
    windowSeconds: Math.round(idleHours * 3600),
    schedulerCpuSecondsPerHour: perIdleHour(idle.metrics),
    schedulerCpuSecondsPerHourProc: perIdleHour(idle.proc),
    memoryCpuSecondsPerHour: perIdleHour(memoryIdle.metrics),
    scrapeCpuMs: Math.round(idle.scrape * 10_000) / 10,
  };
  process.stdout.write(
    `idle ${idleFigures.windowSeconds} s, ${standing.length} active schedules, none due: scheduler CPU ${idleFigures.schedulerCpuSecondsPerHour} s per hour (/proc: ${idleFigures.schedulerCpuSecondsPerHourProc}; target < 1 s); memory ${idleFigures.memoryCpuSecondsPerHour} s per hour\n`,
  );

  // 3. The burst: one-shot reminders for the same instant, made through the RPC far enough
  // ahead that all exist before it (twice the time their creation should take).
  const leadMs = Math.max(5_000, 2 * (settings.BENCH_BURST / createsPerSecond) * 1000 + 3_000);
  const dueAt = new Date(Math.ceil((Date.now() + leadMs) / 1000) * 1000);
  const burst = Array.from({ length: settings.BENCH_BURST }, (_, index) => ({
    userId: users[index % users.length] ?? '',
    userTimeZone: userTimeZone(index % users.length),
    schedule: {
      kind: 'once' as const,
      at: dueAt.toISOString(),
      action: { type: 'remind' as const, text: `burst ${index}: the meeting starts now` },
    },
  }));
  const burstIds = await createAll(bus, burst);
  const spareMs = dueAt.getTime() - Date.now();
  if (spareMs <= 0) throw new Error(`the burst was still being made ${-spareMs} ms after its time`);
  const stackPids = { scheduler: scheduler.child.pid, memory: memory.child.pid };
  const cpuBefore = await readCpuSeconds(stackPids, ['postgres', 'nats-server']);
  await sleep(spareMs + 1_000);
  await waitFor(
    async () => {
      const { rows } = await pool.query<{ done: number }>(
        `SELECT count(*)::int AS done FROM scheduler.runs
          WHERE schedule_id = ANY($1) AND status IN ('fired', 'failed')`,
        [burstIds],
      );
      return rows[0]?.done === burstIds.length || undefined;
    },
    { timeoutMs: 300_000, intervalMs: 1_000, what: 'the burst to be delivered' },
  );
  const cpuAfter = await readCpuSeconds(stackPids, ['postgres', 'nats-server']);

  // started_at is when the claiming tick began (one instant for its whole claim loop), so it
  // says when the engine woke; the message's created_at (its transaction's start) is when the
  // reminder took effect, and finished_at when the run was marked fired after the event.
  const { rows } = await pool.query<{
    status: string;
    woke_ms: number;
    effect_ms: number | null;
    finished_ms: number;
    messages: number;
  }>(
    `SELECT r.status,
            extract(epoch FROM r.started_at - r.scheduled_for) * 1000 AS woke_ms,
            extract(epoch FROM m.created_at - r.scheduled_for) * 1000 AS effect_ms,
            extract(epoch FROM r.finished_at - r.scheduled_for) * 1000 AS finished_ms,
            (SELECT count(*)::int FROM memory.messages d
              WHERE d.user_id = r.user_id AND d.metadata->>'scheduleId' = r.schedule_id::text)
              AS messages
       FROM scheduler.runs r LEFT JOIN memory.messages m ON m.id = r.message_id
      WHERE r.schedule_id = ANY($1)`,
    [burstIds],
  );
  const fired = rows.filter((row) => row.status === 'fired' && row.effect_ms !== null);
  const exactlyOnce = rows.filter((row) => row.messages === 1).length;
  const burstFigures = {
    reminders: burstIds.length,
    fired: fired.length,
    deliveredExactlyOnce: exactlyOnce,
    createdAheadMs: spareMs,
    tookEffectMs: percentiles(
      fired.map((row) => Number(row.effect_ms)),
      Math.round,
    ),
    finishedMs: percentiles(
      fired.map((row) => Number(row.finished_ms)),
      Math.round,
    ),
    engineWokeMs: percentiles(
      rows.map((row) => Number(row.woke_ms)),
      Math.round,
    ),
    // From just before the burst's instant until its last run finished: the two services', and
    // all of the Postgres and NATS servers' (other work on a shared server included).
    cpuMsPerReminder: cpuMsPerTurn(cpuBefore, cpuAfter, burstIds.length),
  };
  const { tookEffectMs: effect, finishedMs: finished } = burstFigures;
  process.stdout.write(
    `burst of ${burstIds.length} reminders due at ${dueAt.toISOString()}: ${fired.length} fired, ${exactlyOnce} delivered exactly once\n` +
      `  took effect (message stored) late by p50 ${effect.p50} ms, p95 ${effect.p95} ms, max ${effect.max} ms (target p95 < 1000 ms)\n` +
      `  run finished late by p50 ${finished.p50} ms, p95 ${finished.p95} ms, max ${finished.max} ms\n` +
      `  engine woke ${burstFigures.engineWokeMs.max} ms late; CPU ms per reminder: ${JSON.stringify(burstFigures.cpuMsPerReminder)}\n`,
  );

  const report = {
    date: new Date().toISOString(),
    schedulerEnv,
    database: database.engine === 'server' ? 'postgres' : 'embedded (PGlite)',
    loadAverageAtStart: load,
    setup: {
      users: users.length,
      schedules: standing.length,
      createsPerSecond,
      firstDue: firstDue.toISOString(),
    },
    idle: idleFigures,
    burst: burstFigures,
    targets: {
      burstP95Under1s: effect.p95 < 1_000,
      idleCpuUnder1sPerHour: idleFigures.schedulerCpuSecondsPerHour < 1,
    },
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await bus?.close();
  await stack.stop();
  await database.stop();
}
