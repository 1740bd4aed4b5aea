import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// A risky tool call waits for its user: approved, it runs; denied or expired, the model is told
// and answers without it. Either way the paused run goes on.

export const ApprovalStatus = z.enum(['pending', 'approved', 'denied', 'expired']);
export type ApprovalStatus = z.infer<typeof ApprovalStatus>;

const Timestamp = z.iso.datetime({ offset: true });

export const Approval = z.object({
  id: Id,
  runId: Id,
  // The turn the run answers: its events (turns.events.<turnId>) tell how it went on.
  turnId: Id,
  conversationId: Id,
  toolName: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  status: ApprovalStatus,
  createdAt: Timestamp,
  expiresAt: Timestamp,
  decidedAt: Timestamp.nullable(),
});
export type Approval = z.infer<typeof Approval>;

export const ApprovalDecision = z.enum(['approve', 'deny']);

// orchestrator.approvals.list: the user's approvals, newest first (pending ones by default).
export const ApprovalsListRequest = z.object({
  userId: Id,
  status: ApprovalStatus.optional(),
  limit: z.number().int().min(1).max(100).default(50),
});
export type ApprovalsListRequest = z.input<typeof ApprovalsListRequest>;
export const ApprovalsListResponse = z.object({ approvals: z.array(Approval) });
export const orchestratorApprovalsList = defineRpc(
  'orchestrator.approvals.list',
  ApprovalsListRequest,
  ApprovalsListResponse,
);

// orchestrator.approvals.get: one of the user's approvals.
export const ApprovalsGetRequest = z.object({ userId: Id, id: Id });
export const ApprovalsGetResponse = z.object({ approval: Approval });
export const orchestratorApprovalsGet = defineRpc(
  'orchestrator.approvals.get',
  ApprovalsGetRequest,
  ApprovalsGetResponse,
);

// orchestrator.approvals.decide: records the decision and queues the run to go on; the outcome
// arrives on turns.events.<turnId>. A decided or expired approval answers `conflict`.
export const ApprovalsDecideRequest = z.object({ userId: Id, id: Id, decision: ApprovalDecision });
export type ApprovalsDecideRequest = z.input<typeof ApprovalsDecideRequest>;
export const ApprovalsDecideResponse = z.object({ approval: Approval });
export const orchestratorApprovalsDecide = defineRpc(
  'orchestrator.approvals.decide',
  ApprovalsDecideRequest,
  ApprovalsDecideResponse,
);

// HTTP: GET /v1/approvals?status=&limit=, POST /v1/approvals/{id} {decision}
export const ApprovalsListQuery = z.strictObject({
  status: ApprovalStatus.optional(),
  limit: z.coerce.number().int().min(1).max(100).optional(),
});
export const ApprovalIdParams = z.strictObject({ id: Id });
export const ApprovalDecisionBody = z.strictObject({ decision: ApprovalDecision });

// What a turn that paused shows its user, beside the reply that asks.
export const ApprovalRequest = z.object({
  id: Id,
  toolName: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  expiresAt: Timestamp,
});
export type ApprovalRequest = z.infer<typeof ApprovalRequest>;
