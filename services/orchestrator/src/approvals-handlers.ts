import { type Bus, BusError, publishWork } from '@jarvis/bus';
import {
  orchestratorApprovalsDecide,
  orchestratorApprovalsGet,
  orchestratorApprovalsList,
  turnRequested,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  decideApproval,
  expireDueApprovals,
  findApproval,
  findStrandedDecisions,
  listApprovals,
  publicApproval,
  type StoredApproval,
} from './repositories/approvals-repository';
import { findRunById } from './repositories/runs-repository';

export function registerApprovalHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(orchestratorApprovalsList, async (request) => {
      const approvals = await listApprovals(
        pool,
        request.userId,
        request.status ?? 'pending',
        request.limit,
      );
      return { approvals: approvals.map(publicApproval) };
    }),
    bus.serve(orchestratorApprovalsGet, async (request) => {
      const approval = await findApproval(pool, request.userId, request.id);
      if (!approval) throw new BusError('not_found', 'approval not found');
      return { approval: publicApproval(approval) };
    }),
    bus.serve(orchestratorApprovalsDecide, async (request) => {
      const status = request.decision === 'approve' ? 'approved' : 'denied';
      const decided = await decideApproval(pool, request.userId, request.id, status);
      if (!decided) {
        const existing = await findApproval(pool, request.userId, request.id);
        if (!existing) throw new BusError('not_found', 'approval not found');
        const why = existing.status === 'pending' ? 'expired' : existing.status;
        throw new BusError('conflict', `the approval was already ${why}`);
      }
      await queueResume(bus, pool, decided);
      return { approval: publicApproval(decided) };
    }),
  ];
}

// The paused run goes on through the TURNS work queue like any turn: one at a time per
// conversation, redelivered after a crash. The message id makes a second queueing a no-op.
async function queueResume(bus: Bus, pool: Pool, approval: StoredApproval): Promise<void> {
  const run = await findRunById(pool, approval.userId, approval.runId);
  if (!run) throw new BusError('not_found', 'the run of this approval is gone');
  await publishWork(
    bus,
    turnRequested,
    {
      turnId: run.turnId,
      runId: run.id,
      userId: run.userId,
      conversationId: run.conversationId,
      userMessageId: run.userMessageId,
      approvalId: approval.id,
    },
    `resume:${approval.id}`,
  );
}

const SWEEP_BATCH = 50;
// A decision whose run has not moved for this long lost its resume.
const STRANDED_AFTER_MS = 30_000;

// Expires approvals nobody answered in time (their runs go on without the call) and re-queues
// decisions whose resume was lost.
export function startApprovalSweeper(bus: Bus, pool: Pool, intervalMs: number): { stop(): void } {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      const due = [
        ...(await expireDueApprovals(pool, SWEEP_BATCH)),
        ...(await findStrandedDecisions(pool, STRANDED_AFTER_MS, SWEEP_BATCH)),
      ];
      for (const approval of due) await queueResume(bus, pool, approval);
    } catch (error) {
      bus.logger.warn({ err: error }, 'approval sweep failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
