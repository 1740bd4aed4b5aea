import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS } from './common';
import { defineEvent } from './define';

// The durable unit of work on the TURNS stream. Its JetStream message id is the turn id (or
// resume:<approval id>), so a re-submitted turn is de-duplicated by the stream itself.
export const TurnRequested = z.object({
  turnId: Id,
  runId: Id,
  userId: Id,
  conversationId: Id,
  userMessageId: Id,
  // The user message's text, which the turn's recall searches memory with: carried here so that
  // memory does not read back what it stored a moment before. Every new turn has it (a submit
  // the sweep finishes takes it from its recorded request); a resume does not need it, its
  // context is in its saved state. A turn queued by a release before it has none: its recall
  // then finds no relevant memories, and its prompt still ends with the message.
  message: z.string().min(1).max(MESSAGE_MAX_CHARS).optional(),
  // Set when the run goes on after a decision on this approval (approved, denied or expired).
  approvalId: Id.optional(),
  // Whether the model's answer is streamed as delta events (someone follows it).
  stream: z.boolean().optional(),
});
export type TurnRequested = z.infer<typeof TurnRequested>;

export const turnRequested = defineEvent('turns.requested', TurnRequested);

export const TURNS_STREAM = 'TURNS';
