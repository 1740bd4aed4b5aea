import { ensureUserEventStream, ensureWorkQueue, type WorkQueueOptions } from '@jarvis/bus';
import { MISSIONS_STREAM, missionWork, TURNS_STREAM, turnRequested } from '@jarvis/contracts';
import { bootService } from '@jarvis/service-kit';
import { registerApprovalHandlers, startApprovalSweeper } from './approvals-handlers';
import { loadEnv } from './env';
import { registerHandlers, startTurnWorker } from './handlers';
import { answerPendingQuestion, startQuestionSweeper } from './missions/mission-questions';
import type { MissionDeps } from './missions/mission-service';
import { startMissionWorker } from './missions/mission-worker';
import { registerMissionHandlers, resumeMissions } from './missions/missions-handlers';
import { registerRunHandlers } from './runs-handlers';
import type { LoopSettings } from './services/agent-loop';
import { createAgentMetrics } from './services/agent-metrics';
import { watchTurnCancellations } from './services/cancel-turn';
import { watchChatRoute } from './services/chat-route';
import { startSubmissionSweeper } from './services/submission-sweeper';
import type { SubmitDeps } from './services/submit-turn';
import { createMemoryTools } from './tools/memory-tools';
import { createMissionTool } from './tools/mission-tool';
import { startRemoteTools } from './tools/remote-tools';
import { createScheduleTools } from './tools/schedule-tools';

const env = loadEnv();

await bootService(
  {
    name: 'orchestrator',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'orchestrator',
      migrations: new URL('../migrations', import.meta.url),
    },
    redis: { url: env.REDIS_URL },
  },
  async ({ bus, pool, redis, logger, metrics }) => {
    const agentMetrics = createAgentMetrics(metrics, pool, logger);
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
    // A mission's tasks get the turn's tools but not start_mission (a mission starts no other)
    // nor the schedule tools (a task does not know the user's time zone).
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
      questionTtlMs: env.MISSION_QUESTION_TTL_MS,
      metrics: agentMetrics,
    };
    registerMissionHandlers(missions);
    const questionSweeper = startQuestionSweeper(missions, env.APPROVAL_SWEEP_MS);
    const chatRoute = watchChatRoute({ bus, logger });
    const worker = await startTurnWorker(
      {
        bus,
        pool,
        redis,
        logger,
        historyLimit: env.HISTORY_LIMIT,
        contextTokenBudget: env.CONTEXT_TOKEN_BUDGET,
        tools: remoteTools.withBuiltIn([
          ...memoryTools,
          createMissionTool(missions),
          ...createScheduleTools(bus, env.APPROVAL_TOOLS),
        ]),
        approvalTtlMs: env.APPROVAL_TTL_MS,
        cancellations: watchTurnCancellations(bus, redis),
        chatRoute,
        loop,
        lockLeaseMs: env.TURN_ACK_WAIT_MS,
        maxAttempts: env.TURN_MAX_DELIVER,
        metrics: agentMetrics,
        // A message in a conversation where a mission's question waits is its answer.
        answerPendingQuestion: (run, text) => answerPendingQuestion(missions, run, text),
      },
      queue,
    );
    const missionWorker = await startMissionWorker(missions, missionQueue);
    await resumeMissions(missions);

    // Finish the turns in hand before the bus, pool and Redis close.
    return {
      stop: async () => {
        sweeper.stop();
        questionSweeper.stop();
        submissionSweeper.stop();
        await worker.stop();
        await missionWorker.stop();
      },
    };
  },
);
