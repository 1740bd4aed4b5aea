import { randomUUID } from 'node:crypto';
import {
  type EventReader,
  ensureUserEventStream,
  ensureWorkQueue,
  readEvents,
  type Worker,
  type WorkQueueOptions,
} from '@jarvis/bus';
import {
  MISSIONS_STREAM,
  missionWork,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentMetrics } from '../services/agent-metrics';
import { type ServicesFixture, startServicesFixture } from '../services-fixture';
import type { MissionDeps } from './mission-service';
import { startMissionWorker } from './mission-worker';
import { registerMissionHandlers } from './missions-handlers';

// A mission worked to its end with memory as its own process and no model gateway: its task
// fails for want of a model, and the mission ends with the plain report, which its end event
// carries for the user's notification channels.
let fixture: ServicesFixture;
let worker: Worker;
const metrics = createMetrics('orchestrator-test');

const queue: WorkQueueOptions = {
  stream: MISSIONS_STREAM,
  consumer: 'orchestrator-missions',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 2,
};

beforeAll(async () => {
  fixture = await startServicesFixture(['memory']);
  await ensureWorkQueue(fixture.bus, missionWork, queue);
  await ensureUserEventStream(fixture.bus);
  const logger = createLogger('orchestrator-test', 'silent');
  const deps: MissionDeps = {
    bus: fixture.bus,
    pool: fixture.db.pool,
    logger,
    tools: [],
    loop: {
      maxSteps: 2,
      toolTimeoutMs: 1_000,
      turnDeadlineMs: 5_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 2_000,
    },
    defaults: { maxTokens: 100_000, maxCostUsd: 1 },
    maxDeliver: queue.maxDeliver,
    leaseMs: 30_000,
    questionTtlMs: 60_000,
    metrics: createAgentMetrics(metrics, fixture.db.pool, logger),
  };
  registerMissionHandlers(deps);
  worker = await startMissionWorker(deps, queue);
  await fixture.bus.nc.flush();
});

afterAll(async () => {
  await worker?.stop();
  await fixture?.stop();
});

describe("a mission's end", () => {
  it("is told on its user's event stream with the report's text", { timeout: 30_000 }, async () => {
    const userId = randomUUID();
    const events: UserEvent[] = [];
    const reader: EventReader = await readEvents(
      fixture.client,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(userId),
        schema: UserEvent,
        afterSeq: 0,
      },
      (event) => events.push(event),
    );

    const { mission } = await fixture.client.request(orchestratorMissionsCreate, {
      userId,
      objective: 'Compare the two offers',
      tasks: [{ title: 'Read both offers', brief: 'Read offer A and offer B.' }],
    });
    const ended = await waitFor(
      () =>
        events.find(
          (event): event is Extract<UserEvent, { type: 'mission_updated' }> =>
            event.type === 'mission_updated' && event.change === 'ended',
        ),
      { timeoutMs: 25_000, what: 'the mission to end' },
    );
    await reader.stop();

    const stored = (
      await fixture.client.request(orchestratorMissionsGet, { userId, id: mission.id })
    ).mission;
    expect(ended.mission).toMatchObject({ id: mission.id, status: 'failed' });
    expect(ended.reportMessageId).toBe(stored.reportMessageId);
    expect(ended.report).toBe(stored.report);
    expect(ended.report).toContain('Mission report: Compare the two offers');
    // Its task counts as a turn of its own kind, failed.
    expect(await metrics.registry.metrics()).toContain(
      'jarvis_turns_total{kind="mission_task",outcome="failed",service="orchestrator-test"} 1',
    );
  });
});
