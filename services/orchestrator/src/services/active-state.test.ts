import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type Schedule, type ScheduleAction, schedulerSchedulesList } from '@jarvis/contracts';
import { type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { insertApproval } from '../repositories/approvals-repository';
import { insertMission, insertTasks } from '../repositories/missions-repository';
import { insertRun } from '../repositories/runs-repository';
import { loadActiveState } from './active-state';

// The user's current state from the orchestrator's own tables, and from a stand-in for the
// scheduler on the bus that answers as a test says (or late).

let db: TestDatabase;
let bus: Bus;
let scheduler: Bus;
const schedules = new Map<string, Schedule[]>();
let schedulerDelayMs = 0;

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('active-state');
  bus = await connectTestBus(namespace);
  scheduler = await connectTestBus(namespace);
  scheduler.serve(schedulerSchedulesList, async ({ userId }) => {
    await new Promise((resolve) => setTimeout(resolve, schedulerDelayMs));
    return { schedules: schedules.get(userId) ?? [] };
  });
  await scheduler.nc.flush();
});

afterAll(async () => {
  await scheduler?.close();
  await bus?.close();
  await db?.stop();
});

const NOW = new Date();

function schedule(action: ScheduleAction, inMs: number): Schedule {
  const at = new Date(NOW.getTime() + inMs).toISOString();
  return {
    id: randomUUID(),
    kind: 'once',
    name: null,
    action,
    at,
    cron: null,
    everyMinutes: null,
    timeZone: 'Europe/Oslo',
    conversationId: null,
    missedPolicy: 'run_once',
    missedMaxRuns: 1,
    graceMinutes: 60,
    startAt: null,
    endAt: null,
    maxRuns: null,
    runCount: 0,
    nextRunAt: at,
    nextRunText: `at ${at}`,
    status: 'active',
    createdBy: 'user',
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
  };
}

function reminder(text: string, inMs: number): Schedule {
  return schedule({ type: 'remind', text }, inMs);
}

async function pendingApproval(userId: string, toolName: string, ttlMs: number): Promise<void> {
  const run = await insertRun(db.pool, {
    id: randomUUID(),
    turnId: randomUUID(),
    userId,
    conversationId: randomUUID(),
    userMessageId: randomUUID(),
    userMessageAt: NOW.toISOString(),
    userMessageSeq: 1,
    traceId: undefined,
    timeZone: undefined,
  });
  await insertApproval(db.pool, {
    id: randomUUID(),
    runId: run.id,
    turnId: run.turnId,
    userId,
    conversationId: run.conversationId,
    toolCallId: randomUUID(),
    toolName,
    arguments: { path: 'skills/trip.md' },
    loopState: {},
    ttlMs,
  });
}

async function runningMission(userId: string, objective: string, done: number, of: number) {
  const id = randomUUID();
  await insertMission(db.pool, {
    id,
    userId,
    conversationId: randomUUID(),
    objective,
    status: 'running',
    createdBy: 'user',
    sourceRunId: undefined,
    maxTokens: 100_000,
    maxCostUsd: 1,
    idempotencyKey: undefined,
    timeZone: undefined,
    trace: undefined,
  });
  const tasks = Array.from({ length: of }, (_, n) => ({
    id: randomUUID(),
    title: `Task ${n + 1}`,
    brief: 'Do it.',
    dependsOn: [],
    tools: undefined,
    skills: [],
  }));
  await insertTasks(db.pool, { id, userId }, tasks);
  await db.pool.query(
    `UPDATE orchestrator.mission_tasks SET status = 'completed' WHERE mission_id = $1 AND number <= $2`,
    [id, done],
  );
}

describe('loadActiveState', () => {
  it("lists the user's pending approvals, running missions and reminders due within 24 hours", async () => {
    const userId = randomUUID();
    await pendingApproval(userId, 'memory_write', 60_000);
    await pendingApproval(userId, 'run_code', -3_600_000);
    await runningMission(userId, 'Plan the trip to Bergen', 1, 3);
    await pendingApproval(randomUUID(), 'forget', 60_000);
    schedules.set(userId, [
      schedule({ type: 'prompt', instruction: 'Summarise my inbox' }, 30 * 60_000),
      reminder('Call the dentist', 60 * 60_000),
      schedule({ type: 'mission', objective: 'Check flight prices to Bergen' }, 2 * 60 * 60_000),
      reminder('Pay the rent', 3 * 24 * 60 * 60_000),
    ]);

    const lines = await loadActiveState({ bus, pool: db.pool }, userId, NOW);

    expect(lines).toEqual([
      `Waiting for the user's approval: memory_write "{\\"path\\":\\"skills/trip.md\\"}"`,
      'Mission running: "Plan the trip to Bergen" (1 of 3 tasks done)',
      expect.stringMatching(/^Reminder due at .*: "Call the dentist"$/),
    ]);
  });

  it('shows at most five of a kind, the soonest reminders past sooner other schedules', async () => {
    const userId = randomUUID();
    const requests = Array.from({ length: 5 }, (_, n) =>
      schedule({ type: 'prompt', instruction: `Request ${n}` }, (n + 1) * 1_000),
    );
    const reminders = Array.from({ length: 8 }, (_, n) =>
      reminder(`Reminder ${n}`, (n + 1) * 60_000),
    );
    schedules.set(userId, [...requests, ...reminders]);

    const lines = await loadActiveState({ bus, pool: db.pool }, userId, NOW);

    expect(lines.map((line) => line.replace(/^.*: /, ''))).toEqual(
      [0, 1, 2, 3, 4].map((n) => `"Reminder ${n}"`),
    );
  });

  it('leaves out what does not answer within 500 ms, and is not slower for it', async () => {
    const userId = randomUUID();
    await runningMission(userId, 'Sort the photos', 0, 2);
    schedules.set(userId, [reminder('Water the plants', 60_000)]);
    schedulerDelayMs = 2_000;
    try {
      const started = Date.now();
      const lines = await loadActiveState({ bus, pool: db.pool }, userId, NOW);

      expect(Date.now() - started).toBeLessThan(1_000);
      expect(lines).toEqual(['Mission running: "Sort the photos" (0 of 2 tasks done)']);
    } finally {
      schedulerDelayMs = 0;
    }
  });

  it('is empty when the user has nothing going on and the scheduler is away', async () => {
    const lonely = await connectTestBus(uniqueNamespace('active-state-alone'));
    try {
      expect(await loadActiveState({ bus: lonely, pool: db.pool }, randomUUID(), NOW)).toEqual([]);
    } finally {
      await lonely.close();
    }
  });
});
