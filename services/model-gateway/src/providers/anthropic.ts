import Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsBase,
  MessageParam,
  RawMessageStreamEvent,
  ToolChoice,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { FinishReason, ToolCall } from '@jarvis/contracts';
import {
  type ChatCall,
  type ChatResult,
  type Provider,
  parseToolArguments,
  withTimeout,
} from './provider';

export type AnthropicOptions = { apiKey: string; baseURL: string | undefined };

// Anthropic requires max_tokens; this is its cap when the caller sets none.
const DEFAULT_MAX_TOKENS = 4_096;

export function createAnthropicProvider(options: AnthropicOptions): Provider {
  const client = new Anthropic({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    // One attempt per call: retries, backoff and fallbacks belong to the router.
    maxRetries: 0,
  });
  return {
    name: 'anthropic',
    hosted: true,
    chat: (call) =>
      withTimeout(call, async (signal) => {
        const body = toRequest(call);
        const requestOptions = { signal };
        if (!call.onDelta) {
          const message = await client.messages.create({ ...body, stream: false }, requestOptions);
          const toolCalls: ToolCall[] = [];
          let content = '';
          for (const block of message.content) {
            if (block.type === 'text') content += block.text;
            if (block.type === 'tool_use') {
              toolCalls.push({ id: block.id, name: block.name, arguments: asRecord(block.input) });
            }
          }
          return {
            content,
            toolCalls,
            finishReason: finishReasonOf(message.stop_reason),
            model: message.model,
            usage: {
              inputTokens: message.usage.input_tokens,
              outputTokens: message.usage.output_tokens,
            },
          };
        }
        const stream = await client.messages.create({ ...body, stream: true }, requestOptions);
        return collectStream(stream, call.onDelta, call.model);
      }),
  };
}

function toRequest(call: ChatCall): MessageCreateParamsBase {
  return {
    model: call.model,
    max_tokens: call.maxTokens ?? DEFAULT_MAX_TOKENS,
    // Anthropic takes the system prompt beside the messages, not among them.
    ...(call.system ? { system: call.system } : {}),
    ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
    messages: toMessages(call.messages),
    ...(call.tools.length === 0
      ? {}
      : {
          tools: call.tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            input_schema: { type: 'object' as const, ...tool.parameters },
          })),
        }),
    ...(call.toolChoice === undefined ? {} : { tool_choice: toolChoiceOf(call.toolChoice) }),
    ...(call.jsonSchema === undefined
      ? {}
      : { output_config: { format: { type: 'json_schema', schema: call.jsonSchema.schema } } }),
  };
}

// Tool results travel as user turns, and Anthropic wants user and assistant turns to alternate,
// so neighbours of one role are merged into one turn of several blocks.
function toMessages(messages: ChatCall['messages']): MessageParam[] {
  const turns: { role: 'user' | 'assistant'; blocks: ContentBlockParam[] }[] = [];
  for (const message of messages) {
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const blocks: ContentBlockParam[] = [];
    if (message.role === 'tool') {
      blocks.push({
        type: 'tool_result',
        tool_use_id: message.toolCallId,
        content: message.content,
      });
    } else {
      if (message.content) blocks.push({ type: 'text', text: message.content });
      if (message.role === 'assistant') {
        for (const toolCall of message.toolCalls ?? []) {
          blocks.push({
            type: 'tool_use',
            id: toolCall.id,
            name: toolCall.name,
            input: toolCall.arguments,
          });
        }
      }
    }
    const last = turns.at(-1);
    if (last?.role === role) last.blocks.push(...blocks);
    else turns.push({ role, blocks });
  }
  return turns.map((turn) => ({ role: turn.role, content: turn.blocks }));
}

function toolChoiceOf(choice: NonNullable<ChatCall['toolChoice']>): ToolChoice {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'none') return { type: 'none' };
  if (choice === 'required') return { type: 'any' };
  return { type: 'tool', name: choice.name };
}

function finishReasonOf(reason: string | null | undefined): FinishReason {
  if (reason === 'end_turn' || reason === 'stop_sequence') return 'stop';
  if (reason === 'max_tokens' || reason === 'model_context_window_exceeded') return 'length';
  if (reason === 'tool_use') return 'tool_calls';
  if (reason === 'refusal') return 'content_filter';
  return 'other';
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

async function collectStream(
  stream: AsyncIterable<RawMessageStreamEvent>,
  onDelta: (text: string) => void,
  requestedModel: string,
): Promise<ChatResult> {
  let content = '';
  let model = requestedModel;
  let finishReason: FinishReason = 'other';
  const usage = { inputTokens: 0, outputTokens: 0 };
  // tool_use blocks stream their input as JSON text, keyed by block index.
  const tools = new Map<number, { id: string; name: string; json: string }>();
  for await (const event of stream) {
    if (event.type === 'message_start') {
      model = event.message.model || model;
      usage.inputTokens = event.message.usage.input_tokens;
      usage.outputTokens = event.message.usage.output_tokens;
    } else if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
      tools.set(event.index, {
        id: event.content_block.id,
        name: event.content_block.name,
        json: '',
      });
    } else if (event.type === 'content_block_delta') {
      if (event.delta.type === 'text_delta') {
        content += event.delta.text;
        onDelta(event.delta.text);
      } else if (event.delta.type === 'input_json_delta') {
        const tool = tools.get(event.index);
        if (tool) tool.json += event.delta.partial_json;
      }
    } else if (event.type === 'message_delta') {
      finishReason = finishReasonOf(event.delta.stop_reason);
      usage.outputTokens = event.usage.output_tokens;
      if (event.usage.input_tokens) usage.inputTokens = event.usage.input_tokens;
    }
  }
  const toolCalls = [...tools.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, tool]) => ({
      id: tool.id,
      name: tool.name,
      arguments: parseToolArguments(tool.json),
    }));
  return { content, toolCalls, finishReason, model, usage };
}
