import { z } from 'zod';
import { Id, Usage } from './common';
import { defineEvent, defineRpc } from './define';

// What a model call is for; each purpose has its own ordered list of models (infra/models.json).
export const ModelPurpose = z.enum(['chat', 'utility']);
export type ModelPurpose = z.infer<typeof ModelPurpose>;

// Tool names as every provider accepts them.
const ToolName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'letters, digits, _ and -, at most 64');
// A JSON Schema object, passed through to the provider as given.
const JsonSchema = z.record(z.string(), z.unknown());

export const ToolCall = z.object({
  id: z.string().min(1).max(200),
  name: ToolName,
  arguments: z.record(z.string(), z.unknown()),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ChatMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string(),
    toolCalls: z.array(ToolCall).max(64).optional(),
  }),
  // The result of one tool call, answered to the assistant message that asked for it.
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string().min(1).max(200),
    content: z.string(),
  }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolDefinition = z.object({
  name: ToolName,
  description: z.string().max(4_000).default(''),
  parameters: JsonSchema,
});
export type ToolDefinition = z.input<typeof ToolDefinition>;

export const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ name: ToolName }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

// Structured output: the reply must be JSON matching this schema. Providers with native support
// get the schema; the gateway validates every answer and asks once more when it does not match.
export const ResponseFormat = z.object({
  type: z.literal('json_schema'),
  name: ToolName.default('answer'),
  schema: JsonSchema,
});

export const ModelChatRequest = z.object({
  purpose: ModelPurpose.default('chat'),
  // Whose budget pays; system work without a user is counted under no one.
  userId: Id.optional(),
  // Names the call for cancellation and in usage events; the gateway makes one up when absent.
  requestId: Id.optional(),
  system: z.string().optional(),
  messages: z.array(ChatMessage).min(1).max(2_000),
  tools: z.array(ToolDefinition).max(128).optional(),
  toolChoice: ToolChoice.optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().min(1).max(64_000).optional(),
  responseFormat: ResponseFormat.optional(),
  // A NATS inbox of the caller: text deltas and tool calls are published there as they arrive,
  // and the reply still carries the whole answer.
  streamTo: z
    .string()
    .regex(/^_INBOX\.[A-Za-z0-9._-]+$/, 'a NATS inbox (_INBOX.…)')
    .optional(),
  // How long the caller will wait for the whole call, fallbacks included.
  deadlineMs: z.number().int().min(100).max(600_000).optional(),
});
export type ModelChatRequest = z.input<typeof ModelChatRequest>;

export const FinishReason = z.enum(['stop', 'length', 'tool_calls', 'content_filter', 'other']);
export type FinishReason = z.infer<typeof FinishReason>;

// One model tried on the way to the answer, in order; the last one answered.
export const ModelAttempt = z.object({
  provider: z.string(),
  model: z.string(),
  // Why this model did not answer (absent for the one that did).
  error: z.string().optional(),
});

export const ModelChatResponse = z.object({
  requestId: Id,
  content: z.string(),
  toolCalls: z.array(ToolCall),
  // The reply parsed as JSON, when a response format was asked for.
  parsed: z.unknown().optional(),
  provider: z.string(),
  model: z.string(),
  finishReason: FinishReason,
  usage: Usage,
  costUsd: z.number().nonnegative(),
  attempts: z.array(ModelAttempt),
});
export type ModelChatResponse = z.infer<typeof ModelChatResponse>;

export const modelChat = defineRpc('model-gateway.chat', ModelChatRequest, ModelChatResponse);

// Published to the request's streamTo inbox while a streamed call runs.
export const ModelChatChunk = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), requestId: Id, text: z.string() }),
  z.object({ type: z.literal('tool_call'), requestId: Id, toolCall: ToolCall }),
]);
export type ModelChatChunk = z.infer<typeof ModelChatChunk>;

// Stops a running call (every replica listens); the call then fails with `cancelled`.
export const modelChatCancel = defineEvent('model-gateway.cancel', z.object({ requestId: Id }));
