import { z } from 'zod';
import { Id } from './common';
import { defineEvent } from './define';

// The durable unit of work on the TURNS stream. Its JetStream message id is the turn id (or
// resume:<approval id>), so a re-submitted turn is de-duplicated by the stream itself.
export const TurnRequested = z.object({
  turnId: Id,
  runId: Id,
  userId: Id,
  conversationId: Id,
  userMessageId: Id,
  // Set when the run goes on after a decision on this approval (approved, denied or expired).
  approvalId: Id.optional(),
  // Whether the model's answer is streamed as delta events (someone follows it).
  stream: z.boolean().optional(),
});
export type TurnRequested = z.infer<typeof TurnRequested>;

export const turnRequested = defineEvent('turns.requested', TurnRequested);

export const TURNS_STREAM = 'TURNS';
