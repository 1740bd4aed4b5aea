import { randomUUID } from 'node:crypto';
import { ensureUserEventStream, ensureWorkQueue, type WorkQueueOptions } from '@jarvis/bus';
import {
  MISSIONS_STREAM,
  type MissionDetail,
  type MissionsCreateRequest,
  missionWork,
  orchestratorMissionsCreate,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServicesFixture, startServicesFixture } from '../services-fixture';
import type { MissionDeps } from './mission-service';
import { registerMissionHandlers } from './missions-handlers';

// orchestrator.missions.create over the bus, with memory as its own process. No mission worker
// runs: the work a mission queues stays on the MISSIONS stream, where the tests count it.
let fixture: ServicesFixture;

const queue: WorkQueueOptions = {
  stream: MISSIONS_STREAM,
  consumer: 'orchestrator-missions',
  ackWaitMs: 30_000,
  maxDeliver: 3,
  maxInFlight: 1,
};

// Two tasks that do not depend on each other: both are queued as soon as the mission starts.
const PLAN = [
  { title: 'Read the budget file', brief: 'Read budget.md and sum this month.' },
  { title: 'Read last month', brief: 'Sum last month from the archive.' },
];

beforeAll(async () => {
  fixture = await startServicesFixture(['memory']);
  await ensureWorkQueue(fixture.bus, missionWork, queue);
  await ensureUserEventStream(fixture.bus);
  const deps: MissionDeps = {
    bus: fixture.bus,
    pool: fixture.db.pool,
    logger: createLogger('orchestrator-test', 'silent'),
    tools: [],
    loop: {
      maxSteps: 4,
      toolTimeoutMs: 1_000,
      turnDeadlineMs: 10_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 5_000,
    },
    defaults: { maxTokens: 100_000, maxCostUsd: 1 },
    maxDeliver: 3,
    leaseMs: 30_000,
    questionTtlMs: 60_000,
  };
  registerMissionHandlers(deps);
  await fixture.bus.nc.flush();
});

afterAll(async () => {
  await fixture?.stop();
});

async function create(request: MissionsCreateRequest): Promise<MissionDetail> {
  return (await fixture.client.request(orchestratorMissionsCreate, request)).mission;
}

async function missionsOf(userId: string) {
  const { rows } = await fixture.db.pool.query<{ id: string; idempotency_key: string | null }>(
    'SELECT id, idempotency_key FROM orchestrator.missions WHERE user_id = $1',
    [userId],
  );
  return rows;
}

// The "I started a mission" notes memory holds for the mission.
async function startNotes(missionId: string): Promise<number> {
  const { rows } = await fixture.db.pool.query(
    "SELECT 1 FROM memory.messages WHERE metadata->>'missionId' = $1",
    [missionId],
  );
  return rows.length;
}

async function queuedWork(): Promise<number> {
  const jsm = await fixture.bus.nc.jetstreamManager();
  return (await jsm.streams.info(fixture.bus.streamName(MISSIONS_STREAM))).state.messages;
}

describe('orchestrator.missions.create with an idempotency key', () => {
  it('answers the mission the key made first, and starts no second one', async () => {
    const userId = randomUUID();
    const before = await queuedWork();
    const request: MissionsCreateRequest = {
      userId,
      objective: 'Check my budget',
      tasks: PLAN,
      createdBy: 'schedule',
      idempotencyKey: `schedule-run:${randomUUID()}`,
    };

    const first = await create(request);
    const again = await create({ ...request, objective: 'Something else' });

    expect(again.id).toBe(first.id);
    expect(again.objective).toBe('Check my budget');
    expect(first).toMatchObject({ status: 'running', createdBy: 'schedule' });
    expect(await missionsOf(userId)).toEqual([
      { id: first.id, idempotency_key: request.idempotencyKey },
    ]);
    // A schedule's mission says in the user's conversation that it started, once.
    expect(await startNotes(first.id)).toBe(1);
    expect(await queuedWork()).toBe(before + PLAN.length);
  });

  it('makes one mission of requests with the same key that race each other', async () => {
    const userId = randomUUID();
    const before = await queuedWork();
    const request: MissionsCreateRequest = {
      userId,
      objective: 'Plan the week',
      createdBy: 'schedule',
      idempotencyKey: `schedule-run:${randomUUID()}`,
    };

    const answers = await Promise.all(Array.from({ length: 6 }, () => create(request)));

    const ids = new Set(answers.map((mission) => mission.id));
    expect(ids.size).toBe(1);
    const [id] = ids;
    expect(await missionsOf(userId)).toHaveLength(1);
    expect(await startNotes(String(id))).toBe(1);
    // One plan step queued for it: the message id de-duplicates the others.
    expect(await queuedWork()).toBe(before + 1);
  });

  it("keeps each user's keys apart, and makes a mission per request without one", async () => {
    const key = `schedule-run:${randomUUID()}`;
    const alice = randomUUID();
    const bob = randomUUID();

    const hers = await create({ userId: alice, objective: 'Hers', idempotencyKey: key });
    const his = await create({ userId: bob, objective: 'His', idempotencyKey: key });
    await create({ userId: alice, objective: 'Unkeyed' });
    await create({ userId: alice, objective: 'Unkeyed' });

    expect(his.id).not.toBe(hers.id);
    expect(his.objective).toBe('His');
    expect(await missionsOf(alice)).toHaveLength(3);
    expect(await missionsOf(bob)).toEqual([{ id: his.id, idempotency_key: key }]);
  });

  it('queues the work a first attempt stored but could not queue when the key comes again', async () => {
    const userId = randomUUID();
    const request: MissionsCreateRequest = {
      userId,
      objective: 'Check my budget',
      tasks: PLAN,
      createdBy: 'schedule',
      idempotencyKey: `schedule-run:${randomUUID()}`,
    };
    // Without its stream the mission's work cannot be queued: the first attempt fails after
    // storing the mission, as one whose NATS went away at that moment would.
    const jsm = await fixture.bus.nc.jetstreamManager();
    await jsm.streams.delete(fixture.bus.streamName(MISSIONS_STREAM));
    try {
      await expect(create(request)).rejects.toThrow();
    } finally {
      await ensureWorkQueue(fixture.bus, missionWork, queue);
    }
    const [stored] = await missionsOf(userId);
    expect(stored).toBeDefined();
    expect(await queuedWork()).toBe(0);

    const retried = await create(request);

    expect(retried.id).toBe(stored?.id);
    expect(retried.tasks.map((task) => task.status)).toEqual(['queued', 'queued']);
    expect(await queuedWork()).toBe(PLAN.length);
    expect(await missionsOf(userId)).toHaveLength(1);
  });
});
