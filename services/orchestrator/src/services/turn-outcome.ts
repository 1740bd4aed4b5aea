import { type Bus, BusError } from '@jarvis/bus';
import {
  type ErrorInfo,
  memoryMessagesGet,
  type TurnEvent,
  TurnEvent as TurnEventSchema,
  turnEventSubject,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { findLatestApproval, type StoredApproval } from '../repositories/approvals-repository';
import type { Run } from '../repositories/runs-repository';

export function approvalRequest(approval: StoredApproval) {
  return {
    id: approval.id,
    toolName: approval.toolName,
    arguments: approval.arguments,
    expiresAt: approval.expiresAt,
  };
}

export function announce(bus: Bus, event: TurnEvent): void {
  bus.publish(turnEventSubject(event.turnId), TurnEventSchema, event);
}

// A run's outcome as its turn announced it: the reply, read back from memory (the one place it
// is stored), with the approval it waits for, if any; or the failure. A reply forgotten since is
// told as not found, as memory tells it.
export async function describeOutcome(
  bus: Bus,
  run: Run,
  latest: StoredApproval | undefined,
): Promise<TurnEvent> {
  const failed = (error: ErrorInfo): TurnEvent => ({
    type: 'failed',
    turnId: run.turnId,
    runId: run.id,
    conversationId: run.conversationId,
    error,
  });
  if (run.status === 'failed' || !run.replyMessageId) {
    return failed(run.error ?? { code: 'internal', message: 'the turn failed' });
  }
  try {
    const { message } = await bus.request(memoryMessagesGet, {
      userId: run.userId,
      id: run.replyMessageId,
    });
    return {
      type: 'done',
      turnId: run.turnId,
      runId: run.id,
      conversationId: run.conversationId,
      reply: { id: message.id, role: 'assistant', content: message.content },
      usage: run.usage,
      ...(run.status === 'waiting_approval' && latest ? { approval: approvalRequest(latest) } : {}),
    };
  } catch (error) {
    if (!(error instanceof BusError) || error.code !== 'not_found') throw error;
    return failed({ code: 'not_found', message: 'the reply was forgotten' });
  }
}

export function isRunFinished(run: Run): boolean {
  return run.status === 'completed' || run.status === 'failed' || run.status === 'waiting_approval';
}

// Tells whoever waits for a finished turn (a retry of its request) how it ended.
export async function announceAgain(bus: Bus, pool: Pool, run: Run): Promise<void> {
  const latest =
    run.status === 'waiting_approval' ? await findLatestApproval(pool, run.id) : undefined;
  announce(bus, await describeOutcome(bus, run, latest));
}
