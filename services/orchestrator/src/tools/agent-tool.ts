import type { ToolDefinition, ToolRisk } from '@jarvis/contracts';
import { z } from 'zod';

export type ToolContext = {
  userId: string;
  conversationId: string;
  runId: string;
  // The turn the run answers: what the remember tool stores is listed as this turn's learning.
  turnId: string;
  // The mission whose task the run is: what a tool keeps (run_code's files) is kept for the
  // mission. Undefined in a turn.
  missionId: string | undefined;
  // The message that started the turn: provenance of what the tools store (a mission's task
  // answers no message).
  userMessageId: string | undefined;
  // The user's IANA zone; undefined when they have set none (times are UTC then).
  timeZone: string | undefined;
  timeoutMs: number;
};

// A tool the model may call: its JSON Schema goes to the model; `run` validates the arguments
// itself (the model's output is never trusted) and throws ToolInputError when they are wrong.
export type AgentTool = {
  definition: Required<ToolDefinition>;
  risk: ToolRisk;
  // The risk of one call, when it depends on the arguments (the loop uses it over `risk`). It
  // sees the model's arguments unchecked, so it must not assume their shape.
  riskOf?(args: Record<string, unknown>): ToolRisk;
  // A tool that asks the user something: the loop pauses on its call (kind `question`) and the
  // user's answer becomes the call's result; `run` is not called.
  pausesForAnswer?: boolean;
  // How long a call may take when the tool needs longer than the loop's TOOL_TIMEOUT_MS (the
  // tools service says so for run_code); still cut at the turn's deadline.
  timeoutMs?: number;
  run(args: Record<string, unknown>, context: ToolContext): Promise<unknown>;
};

// Arguments the model got wrong: its message goes back to the model so it can correct them.
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

// A zod schema as the JSON Schema a model is given (tool parameters, a response format): what
// the caller may send, without the $schema line models do not need.
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return json;
}
