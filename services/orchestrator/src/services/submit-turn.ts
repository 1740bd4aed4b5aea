import { createHash, randomUUID } from 'node:crypto';
import { type Bus, BusError, publishWork } from '@jarvis/bus';
import {
  memoryAppend,
  type TurnSubmitRequest,
  type TurnSubmitResponse,
  turnRequested,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { activeTraceId } from '@jarvis/telemetry';
import type { Redis } from 'ioredis';
import type { z } from 'zod';
import { insertRun } from '../repositories/runs-repository';
import {
  deleteSubmission,
  markSubmissionQueued,
  recordSubmission,
} from '../repositories/submissions-repository';
import { announceAgain, isRunFinished } from './turn-outcome';

export type SubmitRequest = z.output<typeof TurnSubmitRequest>;

// The points between a submit's steps, where a crash test stops the process (FAULT_EXIT_AFTER).
type SubmitStep = 'message_stored' | 'run_recorded';

export type SubmitDeps = {
  bus: Bus;
  pool: Pool;
  redis: Redis;
  onStep?: (step: SubmitStep) => void;
};

const REDIS_UNAVAILABLE = 'the short-lived state store (Redis) is unavailable';

// Records the submission, then stores the user message, records the run and queues the turn.
// The submission is the outbox: a submit that dies between the steps leaves it unqueued, and
// the sweep (submission-sweeper.ts) does the rest, each step idempotent on the turn id.
export async function submitTurn(
  deps: SubmitDeps,
  request: SubmitRequest,
): Promise<TurnSubmitResponse> {
  // A turn takes its conversation's lock in Redis, and the model's budgets are counted there:
  // without it a stored message could only wait, unanswered, so nothing is stored.
  if (deps.redis.status !== 'ready') throw new BusError('unavailable', REDIS_UNAVAILABLE);
  const isNew = await recordSubmission(deps.pool, {
    turnId: request.turnId,
    userId: request.userId,
    request,
    idempotencyKey: request.idempotencyKey,
    requestHash: hashRequest(request),
  });
  return queueTurn(deps, request, isNew);
}

// The steps after the submission is recorded; the sweep runs them again for a submit that died.
export async function queueTurn(
  deps: SubmitDeps,
  request: SubmitRequest,
  isNew: boolean,
): Promise<TurnSubmitResponse> {
  const appended = await deps.bus
    .request(memoryAppend, {
      userId: request.userId,
      conversationId: request.conversationId,
      role: 'user',
      content: request.message,
      idempotencyKey: `turn:${request.turnId}:user`,
      // A schedule's prompt is stored as the user's message, as typed text is: the mark lets
      // clients show it as the schedule's.
      ...(request.scheduleId ? { metadata: { scheduleId: request.scheduleId } } : {}),
    })
    .catch(async (error: unknown) => {
      if (isNothingStored(error, isNew)) await deleteSubmission(deps.pool, request.turnId);
      throw error;
    });
  const { message, seq } = appended;
  deps.onStep?.('message_stored');
  const run = await insertRun(deps.pool, {
    id: randomUUID(),
    turnId: request.turnId,
    userId: request.userId,
    conversationId: message.conversationId,
    userMessageId: message.id,
    userMessageAt: message.createdAt,
    userMessageSeq: seq,
    traceId: activeTraceId(),
    timeZone: request.timeZone,
    scheduleId: request.scheduleId,
  });
  deps.onStep?.('run_recorded');
  const response = {
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    userMessageId: run.userMessageId,
  };
  // A retry of a turn that has ended: whoever retries waits for its outcome, told again.
  if (isRunFinished(run)) {
    await markSubmissionQueued(deps.pool, run.turnId);
    await announceAgain(deps.bus, deps.pool, run);
    return response;
  }
  await publishWork(
    deps.bus,
    turnRequested,
    {
      turnId: run.turnId,
      runId: run.id,
      userId: run.userId,
      conversationId: run.conversationId,
      userMessageId: run.userMessageId,
      message: request.message,
      stream: request.stream,
    },
    run.turnId,
  );
  await markSubmissionQueued(deps.pool, run.turnId);
  return response;
}

// What makes two submissions of one turn id the same request; the stream flag is left out, as
// a retry may follow the turn another way.
function hashRequest(request: SubmitRequest): string {
  const { message, conversationId, timeZone } = request;
  return createHash('sha256')
    .update(JSON.stringify([message, conversationId ?? null, timeZone ?? null]))
    .digest('hex');
}

// Memory refused the message, so it is not stored: the submission has nothing left to finish.
// It may be stored when memory did not answer in time or failed unexpectedly, or (no responders)
// by an earlier attempt at this same submission; the sweep finishes those.
function isNothingStored(error: unknown, isNew: boolean): boolean {
  if (!(error instanceof BusError)) return false;
  if (error.code === 'timeout' || error.code === 'internal') return false;
  return isNew || error.code !== 'unavailable';
}
