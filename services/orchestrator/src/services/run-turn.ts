import { type Bus, BusError, type Outcome, publishWork } from '@jarvis/bus';
import {
  type ErrorInfo,
  EXTRACTION_RECALLED_MAX,
  extractionRequested,
  memoryAppend,
  memoryRecall,
  type TurnEvent,
  TurnEvent as TurnEventSchema,
  type TurnRequested,
  turnEventSubject,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import { tryLockConversation } from '../conversation-lock';
import {
  findRunByTurn,
  markRunCompleted,
  markRunFailed,
  markRunStarted,
  type Run,
} from '../repositories/runs-repository';
import { recordRunTotals } from '../repositories/steps-repository';
import type { AgentTool } from '../tools/agent-tool';
import { createStepRecorder, type LoopSettings, ModelFailure, runAgentLoop } from './agent-loop';
import { buildPrompt } from './build-prompt';

export type TurnDeps = {
  bus: Bus;
  pool: Pool;
  redis: Redis;
  logger: Logger;
  historyLimit: number;
  // Tokens memory may fill with profile, recalled items, summaries and recent messages.
  contextTokenBudget: number;
  // Lease of the conversation lock; renewed while the turn runs.
  lockLeaseMs: number;
  maxDeliver: number;
  tools: AgentTool[];
  loop: LoopSettings;
};

// Another turn of the same conversation is running: look again shortly.
const LOCKED_RETRY_MS = 250;

export async function runTurn(
  deps: TurnDeps,
  turn: TurnRequested,
  deliveryCount: number,
): Promise<Outcome> {
  const run = await findRunByTurn(deps.pool, turn.userId, turn.turnId);
  if (!run) {
    deps.logger.error({ turnId: turn.turnId }, 'turn has no run; dropping');
    return { type: 'drop' };
  }
  // A redelivered turn that already finished only needs its outcome announced again.
  if (run.status === 'completed' || run.status === 'failed') {
    announce(deps.bus, toEvent(run));
    return { type: 'ack' };
  }

  const lock = await tryLockConversation(
    deps.redis,
    deps.bus.namespace,
    run.conversationId,
    deps.lockLeaseMs,
  );
  if (!lock) return { type: 'retry', delayMs: LOCKED_RETRY_MS };
  const renewal = setInterval(
    () => {
      lock.renew().then(
        (isHeld) => {
          if (!isHeld) deps.logger.warn({ turnId: run.turnId }, 'conversation lock lease lost');
        },
        (error: unknown) => deps.logger.warn({ err: error }, 'conversation lock renewal failed'),
      );
    },
    Math.max(deps.lockLeaseMs / 3, 100),
  );
  try {
    await markRunStarted(deps.pool, run.id);
    const event = await answer(deps, run);
    announce(deps.bus, event);
    return { type: 'ack' };
  } catch (error) {
    const info = describeFailure(error);
    // Model errors are final (the model gateway already retried and fell back); anything else
    // is worth another delivery until the last one.
    const isFinal = error instanceof ModelFailure || deliveryCount >= deps.maxDeliver;
    deps.logger.warn({ turnId: run.turnId, err: error, isFinal }, 'turn failed');
    if (!isFinal) return { type: 'retry', delayMs: Math.min(1_000 * deliveryCount, 10_000) };
    await markRunFailed(deps.pool, run.id, info);
    await storeFailureNote(deps, run, info);
    announce(deps.bus, {
      type: 'failed',
      turnId: run.turnId,
      runId: run.id,
      conversationId: run.conversationId,
      error: info,
    });
    return { type: 'ack' };
  } finally {
    clearInterval(renewal);
    // If Redis is gone the lease simply expires; the turn's outcome stands either way.
    await lock.release().catch(() => {});
  }
}

async function answer(deps: TurnDeps, run: Run): Promise<TurnEvent> {
  // markRunStarted has just counted this attempt.
  const recorder = createStepRecorder(deps.pool, {
    runId: run.id,
    userId: run.userId,
    attempt: run.attempts + 1,
  });
  const recallStarted = new Date();
  const recall = await deps.bus.request(memoryRecall, {
    userId: run.userId,
    conversationId: run.conversationId,
    messageId: run.userMessageId,
    tokenBudget: deps.contextTokenBudget,
    recentLimit: deps.historyLimit,
  });
  const context = {
    tokenBudget: deps.contextTokenBudget,
    profile: recall.profile.length,
    relevant: recall.relevant.length,
    summaries: recall.summaries.length,
    recent: recall.recent.length,
  };
  await recorder.record({
    kind: 'recall',
    name: 'memory.recall',
    status: 'ok',
    output: {
      ...context,
      items: recall.relevant.map((item) => ({ kind: item.kind, id: item.id })),
    },
    startedAt: recallStarted,
    durationMs: Date.now() - recallStarted.getTime(),
  });
  const result = await runAgentLoop(
    {
      bus: deps.bus,
      tools: deps.tools,
      settings: deps.loop,
      recorder,
      emit: (event) => announce(deps.bus, event),
    },
    run,
    buildPrompt(recall, new Date()),
  );
  // The idempotency key makes a retried turn find the reply a crashed attempt already stored,
  // so a conversation never shows two replies to one message.
  const { message } = await deps.bus.request(memoryAppend, {
    userId: run.userId,
    conversationId: run.conversationId,
    role: 'assistant',
    content: result.content,
    idempotencyKey: `turn:${run.turnId}:reply`,
  });
  await recordRunTotals(deps.pool, run.id, {
    context,
    costUsd: result.costUsd,
  });
  await markRunCompleted(deps.pool, run.id, {
    replyMessageId: message.id,
    replyContent: message.content,
    provider: result.provider,
    model: result.model,
    usage: result.usage,
  });
  await requestExtraction(deps, run, message.id, [
    ...recall.relevant.map((item) => item.id),
    ...recall.profile.map((fact) => fact.id),
  ]);
  return {
    type: 'done',
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    reply: { id: message.id, role: 'assistant', content: message.content },
    usage: result.usage,
  };
}

// Fact extraction is a by-product of the turn: if it cannot be queued (the memory service has
// not created its stream yet, NATS hiccups), the user still gets the reply.
async function requestExtraction(
  deps: TurnDeps,
  run: Run,
  replyMessageId: string,
  recalledIds: string[],
): Promise<void> {
  try {
    await publishWork(
      deps.bus,
      extractionRequested,
      {
        userId: run.userId,
        conversationId: run.conversationId,
        runId: run.id,
        turnId: run.turnId,
        userMessageId: run.userMessageId,
        replyMessageId,
        recalledIds: [...new Set(recalledIds)].slice(0, EXTRACTION_RECALLED_MAX),
      },
      `extract:${run.turnId}`,
    );
  } catch (error) {
    deps.logger.warn({ err: error, turnId: run.turnId }, 'could not queue fact extraction');
  }
}

function announce(bus: Bus, event: TurnEvent): void {
  bus.publish(turnEventSubject(event.turnId), TurnEventSchema, event);
}

function toEvent(run: Run): TurnEvent {
  if (run.status === 'completed' && run.replyMessageId && run.replyContent !== null) {
    return {
      type: 'done',
      turnId: run.turnId,
      runId: run.id,
      conversationId: run.conversationId,
      reply: { id: run.replyMessageId, role: 'assistant', content: run.replyContent },
      usage: run.usage,
    };
  }
  return {
    type: 'failed',
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    error: run.error ?? { code: 'internal', message: 'the turn failed' },
  };
}

// The conversation says why there is no answer, in the reply's place (same idempotency key,
// so a turn never has both). Best effort: memory itself may be what failed.
async function storeFailureNote(deps: TurnDeps, run: Run, info: ErrorInfo): Promise<void> {
  try {
    await deps.bus.request(memoryAppend, {
      userId: run.userId,
      conversationId: run.conversationId,
      role: 'assistant',
      content: failureNote(info),
      idempotencyKey: `turn:${run.turnId}:reply`,
      metadata: { error: info.code },
    });
  } catch (error) {
    deps.logger.warn({ err: error, turnId: run.turnId }, 'could not store the failure note');
  }
}

function failureNote(info: ErrorInfo): string {
  switch (info.code) {
    case 'budget_exceeded':
      return `I can't answer this now: ${info.message}.`;
    case 'unavailable':
      return `I couldn't reach a language model to answer this (${info.message}). Your message is saved; ask again when it is back.`;
    case 'timeout':
      return `The language model took too long to answer this (${info.message}). Your message is saved; ask again.`;
    case 'payload_too_large':
      return `This is too long for the language models I can use (${info.message}).`;
    default:
      return `Something went wrong while answering this (${info.message}).`;
  }
}

// A model failure carries the model gateway's typed error; anything else is ours.
function describeFailure(error: unknown): ErrorInfo {
  const cause = error instanceof ModelFailure ? error.cause : error;
  if (cause instanceof BusError) return cause.toInfo();
  if (error instanceof ModelFailure) {
    return { code: 'unavailable', message: 'the model could not be reached' };
  }
  return { code: 'internal', message: 'the turn failed' };
}
