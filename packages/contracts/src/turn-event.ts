import { z } from 'zod';
import { Id, Usage } from './common';
import { ErrorInfo } from './errors';
import { ApprovalRequest } from './orchestrator-approvals';
import { ToolScreenshot } from './tools-screenshots';
import { ToolFile } from './tools-workspaces';

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
  // Set when the run paused on a risky tool call: the reply asks the user to decide.
  approval: ApprovalRequest.optional(),
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

// Progress while the turn runs: the answer's text as it is written, and each tool call.
const TurnDelta = z.object({ type: z.literal('delta'), turnId: Id, runId: Id, text: z.string() });
const ToolStarted = z.object({
  type: z.literal('tool_started'),
  turnId: Id,
  runId: Id,
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
});
const ToolFinished = z.object({
  type: z.literal('tool_finished'),
  turnId: Id,
  runId: Id,
  toolCallId: z.string(),
  name: z.string(),
  isError: z.boolean(),
  durationMs: z.number().int().nonnegative(),
  // The screenshot the tool took (browser_screenshot), for the chat to show.
  screenshot: ToolScreenshot.optional(),
  // The files the tool wrote (run_code's, in the workspace), for the chat to show or link.
  files: z.array(ToolFile).optional(),
});

export const TurnEvent = z.discriminatedUnion('type', [
  TurnDone,
  TurnFailed,
  TurnDelta,
  ToolStarted,
  ToolFinished,
]);
export type TurnEvent = z.infer<typeof TurnEvent>;

// The last event of a turn: it answered, or it failed.
export function isTurnOutcome(event: TurnEvent): event is TurnDone | TurnFailed {
  return event.type === 'done' || event.type === 'failed';
}

// Published on core NATS per turn; the gateway listens on the subject of the turn it submitted.
export function turnEventSubject(turnId: string): string {
  return `turns.events.${turnId}`;
}
