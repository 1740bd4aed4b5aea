import { z } from 'zod';
import { Id, Usage } from './common';
import { ErrorInfo } from './errors';

export const TurnDone = z.object({
  type: z.literal('done'),
  turnId: Id,
  runId: Id,
  conversationId: Id,
  reply: z.object({
    id: Id,
    role: z.literal('assistant'),
    content: z.string(),
  }),
  usage: Usage,
});
export type TurnDone = z.infer<typeof TurnDone>;

export const TurnFailed = z.object({
  type: z.literal('failed'),
  turnId: Id,
  runId: Id,
  conversationId: Id,
  error: ErrorInfo,
});
export type TurnFailed = z.infer<typeof TurnFailed>;

export const TurnEvent = z.discriminatedUnion('type', [TurnDone, TurnFailed]);
export type TurnEvent = z.infer<typeof TurnEvent>;

// Published on core NATS per turn; the gateway listens on the subject of the turn it submitted.
export function turnEventSubject(turnId: string): string {
  return `turns.events.${turnId}`;
}
