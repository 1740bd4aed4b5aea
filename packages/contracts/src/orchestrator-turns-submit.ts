import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, TimeZone } from './common';
import { defineRpc } from './define';

// Accepts a user message: stores it, then queues its turn on JetStream. The reply arrives later
// as a turn event, so a turn survives an orchestrator crash between accept and answer. The same
// turn id submitted again is the same turn: its outcome is announced again if it has ended; with
// another message it is refused (`idempotency_key_reused`). Refused with `unavailable`, before
// anything is stored, while the orchestrator's Redis is down.
export const TurnSubmitRequest = z.object({
  userId: Id,
  conversationId: Id.optional(),
  message: z.string().min(1).max(MESSAGE_MAX_CHARS),
  turnId: Id,
  // The client's Idempotency-Key, which the turn id was derived from: kept with the turn.
  idempotencyKey: z.string().min(1).max(200).optional(),
  timeZone: TimeZone.optional(),
  // Started by this schedule's occurrence (a prompt action), not typed by the user: kept in the
  // user message's metadata ({scheduleId}) so that clients can tell it apart.
  scheduleId: Id.optional(),
  // Someone follows the answer as it is written (delta events): the model streams it. Without
  // a follower it comes whole, which costs the model gateway a quarter of the CPU.
  stream: z.boolean().default(false),
});
export type TurnSubmitRequest = z.input<typeof TurnSubmitRequest>;

export const TurnSubmitResponse = z.object({
  turnId: Id,
  runId: Id,
  conversationId: Id,
  userMessageId: Id,
});
export type TurnSubmitResponse = z.infer<typeof TurnSubmitResponse>;

export const turnSubmit = defineRpc(
  'orchestrator.turns.submit',
  TurnSubmitRequest,
  TurnSubmitResponse,
);
