import { randomUUID } from 'node:crypto';
import { type Bus, publishWork } from '@jarvis/bus';
import {
  memoryAppend,
  type TurnSubmitRequest,
  type TurnSubmitResponse,
  turnRequested,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { activeTraceId } from '@jarvis/telemetry';
import type { z } from 'zod';
import { insertRun } from '../repositories/runs-repository';

// Stores the user message, records the run, then queues the turn: in that order, so a crash at
// any point leaves either nothing queued (the client retries with the same turn id and every
// step is idempotent) or a turn whose message is already safe.
export async function submitTurn(
  bus: Bus,
  pool: Pool,
  request: z.output<typeof TurnSubmitRequest>,
): Promise<TurnSubmitResponse> {
  const { message } = await bus.request(memoryAppend, {
    userId: request.userId,
    conversationId: request.conversationId,
    role: 'user',
    content: request.message,
    idempotencyKey: `turn:${request.turnId}:user`,
  });
  const run = await insertRun(pool, {
    id: randomUUID(),
    turnId: request.turnId,
    userId: request.userId,
    conversationId: message.conversationId,
    userMessageId: message.id,
    traceId: activeTraceId(),
    timeZone: request.timeZone,
  });
  await publishWork(
    bus,
    turnRequested,
    {
      turnId: run.turnId,
      runId: run.id,
      userId: run.userId,
      conversationId: run.conversationId,
      userMessageId: run.userMessageId,
      stream: request.stream,
    },
    run.turnId,
  );
  return {
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    userMessageId: run.userMessageId,
  };
}
