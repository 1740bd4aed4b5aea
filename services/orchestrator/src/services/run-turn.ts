import { type Bus, BusError, type Outcome, publishWork } from '@jarvis/bus';
import {
  type ErrorInfo,
  EXTRACTION_RECALLED_MAX,
  extractionRequested,
  memoryAppend,
  memoryRecall,
  modelChat,
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
import { buildPrompt } from './build-prompt';

export type TurnDeps = {
  bus: Bus;
  pool: Pool;
  redis: Redis;
  logger: Logger;
  historyLimit: number;
  // Tokens memory may fill with profile, recalled items, summaries and recent messages.
  contextTokenBudget: number;
  modelCallTimeoutMs: number;
  // Lease of the conversation lock; renewed while the turn runs.
  lockLeaseMs: number;
  maxDeliver: number;
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
    const isFinal = isModelFailure(error) || deliveryCount >= deps.maxDeliver;
    deps.logger.warn({ turnId: run.turnId, err: error, isFinal }, 'turn failed');
    if (!isFinal) return { type: 'retry', delayMs: Math.min(1_000 * deliveryCount, 10_000) };
    await markRunFailed(deps.pool, run.id, info);
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
  const recall = await deps.bus.request(memoryRecall, {
    userId: run.userId,
    conversationId: run.conversationId,
    messageId: run.userMessageId,
    tokenBudget: deps.contextTokenBudget,
    recentLimit: deps.historyLimit,
  });
  const completion = await deps.bus
    .request(
      modelChat,
      { purpose: 'chat', userId: run.userId, messages: buildPrompt(recall, new Date()) },
      { timeoutMs: deps.modelCallTimeoutMs },
    )
    .catch((error: unknown) => {
      throw new ModelFailure(error);
    });
  // The idempotency key makes a retried turn find the reply a crashed attempt already stored,
  // so a conversation never shows two replies to one message.
  const { message } = await deps.bus.request(memoryAppend, {
    userId: run.userId,
    conversationId: run.conversationId,
    role: 'assistant',
    content: completion.content,
    idempotencyKey: `turn:${run.turnId}:reply`,
  });
  await markRunCompleted(deps.pool, run.id, {
    replyMessageId: message.id,
    replyContent: message.content,
    provider: completion.provider,
    model: completion.model,
    usage: completion.usage,
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
    usage: completion.usage,
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

class ModelFailure extends Error {
  readonly info: ErrorInfo;

  constructor(cause: unknown) {
    super('model call failed', { cause });
    this.info =
      cause instanceof BusError
        ? cause.toInfo()
        : { code: 'unavailable', message: 'the model could not be reached' };
  }
}

function isModelFailure(error: unknown): error is ModelFailure {
  return error instanceof ModelFailure;
}

function describeFailure(error: unknown): ErrorInfo {
  if (error instanceof ModelFailure) return error.info;
  if (error instanceof BusError) return error.toInfo();
  return { code: 'internal', message: 'the turn failed' };
}
