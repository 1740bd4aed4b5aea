import { Bus, ensureWorkQueue, type WorkQueueOptions } from '@jarvis/bus';
import { MISSIONS_STREAM, missionWork, TURNS_STREAM, turnRequested } from '@jarvis/contracts';
import { createPool, isDatabaseReachable, migrate } from '@jarvis/db';
import { createService, databasePoolSettings } from '@jarvis/service-kit';
import { createLogger, createMetrics, startTelemetry } from '@jarvis/telemetry';
import { Redis } from 'ioredis';
import { registerApprovalHandlers, startApprovalSweeper } from './approvals-handlers';
import { loadEnv } from './env';
import { registerHandlers, startTurnWorker } from './handlers';
import type { MissionDeps } from './missions/mission-service';
import { startMissionWorker } from './missions/mission-worker';
import { registerMissionHandlers, resumeMissions } from './missions/missions-handlers';
import { registerRunHandlers } from './runs-handlers';
import type { LoopSettings } from './services/agent-loop';
import { watchTurnCancellations } from './services/cancel-turn';
import { startSubmissionSweeper } from './services/submission-sweeper';
import type { SubmitDeps } from './services/submit-turn';
import { ensureUserEventStream } from './services/user-events';
import { createMemoryTools } from './tools/memory-tools';
import { createMissionTool } from './tools/mission-tool';
import { startRemoteTools } from './tools/remote-tools';

const SERVICE = 'orchestrator';

const env = loadEnv();
const telemetry = startTelemetry({
  serviceName: SERVICE,
  otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
});
const logger = createLogger(SERVICE, env.LOG_LEVEL);
const metrics = createMetrics(SERVICE);

try {
  const pool = createPool({ ...databasePoolSettings(env), applicationName: SERVICE });
  await migrate(pool, {
    schema: 'orchestrator',
    directory: new URL('../migrations', import.meta.url),
  });
  const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: true });
  redis.on('error', () => {}); // reported by the readiness check and the watchdog
  await redis.connect();
  const bus = await Bus.connect({
    url: env.NATS_URL,
    namespace: env.NATS_NAMESPACE,
    name: SERVICE,
    logger,
  });

  const queue: WorkQueueOptions = {
    stream: TURNS_STREAM,
    consumer: 'orchestrator',
    ackWaitMs: env.TURN_ACK_WAIT_MS,
    // Unlimited: a turn waiting behind others of its conversation is redelivered as often as
    // that takes (each wait would use up a delivery). runTurn gives up after TURN_MAX_DELIVER
    // attempts that actually started.
    maxDeliver: -1,
    maxInFlight: env.TURN_CONCURRENCY,
  };
  const missionQueue: WorkQueueOptions = {
    stream: MISSIONS_STREAM,
    consumer: 'orchestrator-missions',
    ackWaitMs: env.TURN_ACK_WAIT_MS,
    maxDeliver: env.TURN_MAX_DELIVER,
    maxInFlight: env.MISSION_CONCURRENCY,
  };
  await ensureWorkQueue(bus, turnRequested, queue);
  await ensureWorkQueue(bus, missionWork, missionQueue);
  await ensureUserEventStream(bus);
  const submit: SubmitDeps = {
    bus,
    pool,
    redis,
    onStep: (step) => {
      if (step !== env.FAULT_EXIT_AFTER) return;
      logger.fatal({ step }, 'exiting mid-submit (FAULT_EXIT_AFTER)');
      process.exit(1);
    },
  };
  registerHandlers(submit);
  registerRunHandlers(bus, pool);
  registerApprovalHandlers(bus, pool);
  const sweeper = startApprovalSweeper(bus, pool, env.APPROVAL_SWEEP_MS);
  const submissionSweeper = startSubmissionSweeper(
    { ...submit, logger },
    { intervalMs: env.TURN_SUBMIT_SWEEP_MS, staleMs: env.TURN_SUBMIT_STALE_MS },
  );

  const memoryTools = createMemoryTools(bus, env.APPROVAL_TOOLS);
  const remoteTools = await startRemoteTools(bus, {
    logger,
    approvalTools: env.APPROVAL_TOOLS,
    refreshMs: env.TOOLS_REFRESH_MS,
  });
  const tools = remoteTools.withBuiltIn(memoryTools);
  const loop: LoopSettings = {
    maxSteps: env.MAX_STEPS_PER_TURN,
    toolTimeoutMs: env.TOOL_TIMEOUT_MS,
    turnDeadlineMs: env.TURN_DEADLINE_MS,
    toolResultMaxChars: env.TOOL_RESULT_MAX_CHARS,
    maxOutputTokens: env.MODEL_MAX_OUTPUT_TOKENS,
    turnOutputTokenCap: env.TURN_OUTPUT_TOKEN_CAP,
    modelCallTimeoutMs: env.MODEL_CALL_TIMEOUT_MS,
  };
  // A mission's tasks get the turn's tools but not start_mission: a mission starts no other.
  const missions: MissionDeps = {
    bus,
    pool,
    logger,
    tools,
    loop: {
      ...loop,
      maxSteps: env.MISSION_TASK_MAX_STEPS,
      turnDeadlineMs: env.MISSION_TASK_DEADLINE_MS,
    },
    defaults: { maxTokens: env.MISSION_MAX_TOKENS, maxCostUsd: env.MISSION_MAX_COST_USD },
    maxDeliver: env.TURN_MAX_DELIVER,
    leaseMs: env.TURN_ACK_WAIT_MS,
  };
  registerMissionHandlers(missions);
  const worker = await startTurnWorker(
    {
      bus,
      pool,
      redis,
      logger,
      historyLimit: env.HISTORY_LIMIT,
      contextTokenBudget: env.CONTEXT_TOKEN_BUDGET,
      tools: remoteTools.withBuiltIn([...memoryTools, createMissionTool(missions)]),
      approvalTtlMs: env.APPROVAL_TTL_MS,
      cancellations: watchTurnCancellations(bus, redis),
      loop,
      lockLeaseMs: env.TURN_ACK_WAIT_MS,
      maxAttempts: env.TURN_MAX_DELIVER,
    },
    queue,
  );
  const missionWorker = await startMissionWorker(missions, missionQueue);
  await resumeMissions(missions);

  const service = createService({
    name: SERVICE,
    port: env.HTTP_PORT,
    logger,
    metrics,
    checks: {
      nats: () => bus.isConnected(),
      postgres: () => isDatabaseReachable(pool),
      redis: () => redis.status === 'ready',
    },
    dependencyLossExitMs: env.DEPENDENCY_LOSS_EXIT_MS,
    // Finish the turns in hand before closing what they use.
    onStop: async () => {
      sweeper.stop();
      submissionSweeper.stop();
      await worker.stop();
      await missionWorker.stop();
      await bus.close();
      await pool.end();
      redis.disconnect();
      await telemetry.stop();
    },
  });
  await service.start();
} catch (error) {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
}
