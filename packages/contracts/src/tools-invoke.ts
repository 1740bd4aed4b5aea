import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Runs one registered tool. Its errors are typed replies, each with a message written for the
// model that made the call:
// - not_found: no tool by that name.
// - bad_request: the arguments do not match the tool's inputSchema, or the tool refused them
//   (a URL it does not fetch); the model can correct them and call again.
// - forbidden: the tool refused on policy (a private network address).
// - timeout: the tool did not finish within timeoutMs.
// - unavailable: what the tool reaches failed (a site that is down or answered an error).
// - internal: the tool itself broke; the message says which tool, not why.
export const ToolsInvokeRequest = z.object({
  userId: Id,
  name: z.string().min(1).max(64),
  // Model output, not yet checked: the tools service validates it against the tool's schema.
  arguments: z.record(z.string(), z.unknown()),
  runId: Id.optional(),
  conversationId: Id.optional(),
  // Set when a mission's task made the call: tools that keep files (run_code's workspace) keep
  // them for the mission rather than for the conversation.
  missionId: Id.optional(),
  // How long the caller waits; the tool is stopped when it passes.
  timeoutMs: z.number().int().min(1).max(600_000),
});
export type ToolsInvokeRequest = z.infer<typeof ToolsInvokeRequest>;

export const ToolsInvokeResponse = z.object({ result: z.json() });
export type ToolsInvokeResponse = z.infer<typeof ToolsInvokeResponse>;

export const toolsInvoke = defineRpc('tools.invoke', ToolsInvokeRequest, ToolsInvokeResponse);
