import { z } from 'zod';
import { Id } from './common';
import { defineEvent, defineRpc } from './define';

// orchestrator.turns.cancel: stops one of the user's turns that is queued or running. The turn
// stops before its next step (an in-flight model call is cancelled), stores "Stopped at your
// request." as its reply, and ends with a `failed` event of code `cancelled`. A turn that has
// ended (answered, failed, or paused on an approval) answers `conflict`; another user's answers
// `not_found`, like a missing one.
export const TurnCancelRequest = z.object({ userId: Id, turnId: Id });
export type TurnCancelRequest = z.infer<typeof TurnCancelRequest>;
export const TurnCancelResponse = z.object({
  turnId: Id,
  runId: Id,
  // The outcome arrives as the turn's last event (turns.events.<turnId>).
  status: z.literal('cancelling'),
});
export type TurnCancelResponse = z.infer<typeof TurnCancelResponse>;
export const turnCancel = defineRpc(
  'orchestrator.turns.cancel',
  TurnCancelRequest,
  TurnCancelResponse,
);

// Core NATS, heard by every orchestrator replica: the one running the turn stops it at once.
export const turnCancelRequested = defineEvent(
  'orchestrator.turns.cancel-requested',
  z.object({ turnId: Id }),
);

// HTTP: POST /v1/turns/{turnId}/cancel
export const TurnIdParams = z.strictObject({ turnId: Id });
