import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, TimeZone, Usage } from '../common';
import { Approval, ApprovalRequest } from '../orchestrator-approvals';
import { TurnSubmitResponse } from '../orchestrator-turns-submit';
import { TurnEvent } from '../turn-event';

// POST /v1/chat
export const ChatRequest = z.strictObject({
  message: z.string().trim().min(1, 'message must not be empty').max(MESSAGE_MAX_CHARS),
  conversationId: Id.optional(),
  // Where the user is: the prompt gives the date and time there (default UTC).
  timeZone: TimeZone.optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

// POST /v1/chat's headers. The same Idempotency-Key with the same body is the same turn: it is
// answered again (waited for while it runs); with another body it is refused with 422.
export const ChatHeaders = z.object({ 'Idempotency-Key': z.string().min(1).max(200).optional() });

export const ChatResponse = z.object({
  // Cancel it with POST /v1/turns/{turnId}/cancel (a streamed turn names it in every event).
  turnId: Id,
  conversationId: Id,
  runId: Id,
  reply: z.object({ role: z.literal('assistant'), content: z.string() }),
  usage: Usage,
  // The turn paused on a risky tool call: decide with POST /v1/approvals/{id}.
  approval: ApprovalRequest.optional(),
});
export type ChatResponse = z.infer<typeof ChatResponse>;

// POST /v1/chat with Accept: text/event-stream: the data of each event, named by its type.
// `accepted` comes first, with the ids a client needs to cancel the turn; then the turn's events.
export const ChatAccepted = TurnSubmitResponse.extend({ type: z.literal('accepted') });
export type ChatAccepted = z.infer<typeof ChatAccepted>;
export const ChatStreamEvent = z.union([ChatAccepted, TurnEvent]);

// POST /v1/approvals/{id}: answers like POST /v1/chat (`approval` is a new request, when the run
// paused again on another risky call), with the approval just decided.
export const ApprovalDecisionResponse = ChatResponse.extend({ decided: Approval });
export type ApprovalDecisionResponse = z.infer<typeof ApprovalDecisionResponse>;
