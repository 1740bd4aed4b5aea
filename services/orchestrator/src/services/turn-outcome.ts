import type { Bus } from '@jarvis/bus';
import { type TurnEvent, TurnEvent as TurnEventSchema, turnEventSubject } from '@jarvis/contracts';
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

// A run's outcome as its turn announced it: the reply (with the approval it waits for, if any)
// or the failure.
export function toEvent(run: Run, latest: StoredApproval | undefined): TurnEvent {
  if (run.status !== 'failed' && run.replyMessageId && run.replyContent !== null) {
    return {
      type: 'done',
      turnId: run.turnId,
      runId: run.id,
      conversationId: run.conversationId,
      reply: { id: run.replyMessageId, role: 'assistant', content: run.replyContent },
      usage: run.usage,
      ...(run.status === 'waiting_approval' && latest ? { approval: approvalRequest(latest) } : {}),
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

export function isRunFinished(run: Run): boolean {
  return run.status === 'completed' || run.status === 'failed' || run.status === 'waiting_approval';
}

// Tells whoever waits for a finished turn (a retry of its request) how it ended.
export async function announceAgain(bus: Bus, pool: Pool, run: Run): Promise<void> {
  const latest =
    run.status === 'waiting_approval' ? await findLatestApproval(pool, run.id) : undefined;
  announce(bus, toEvent(run, latest));
}
