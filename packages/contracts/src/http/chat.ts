import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, TimeZone, Usage } from '../common';
import { ApprovalRequest } from '../orchestrator-approvals';

// POST /v1/chat
export const ChatRequest = z.strictObject({
  message: z.string().trim().min(1, 'message must not be empty').max(MESSAGE_MAX_CHARS),
  conversationId: Id.optional(),
  // Where the user is: the prompt gives the date and time there (default UTC).
  timeZone: TimeZone.optional(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

export const ChatResponse = z.object({
  conversationId: Id,
  runId: Id,
  reply: z.object({ role: z.literal('assistant'), content: z.string() }),
  usage: Usage,
  // The turn paused on a risky tool call: decide with POST /v1/approvals/{id}.
  approval: ApprovalRequest.optional(),
});
export type ChatResponse = z.infer<typeof ChatResponse>;
