import type { FinishReason, ToolCall } from '@jarvis/contracts';
import OpenAI from 'openai';
import type {
  ChatCompletionCreateParams,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import { createHttpTransport } from './http-transport';
import { type ChatCall, type ChatResult, type Provider, parseToolArguments } from './provider';

export type OpenAiCompatibleOptions = {
  name: string;
  baseURL: string | undefined;
  apiKey: string;
  hosted: boolean;
};

const OPENAI_BASE_URL = 'https://api.openai.com/v1';

// OpenAI itself, and any other server that speaks the same API (vLLM, LM Studio, llama.cpp).
// Streamed answers go through the `openai` SDK, which parses the event stream; everything else
// through the HTTP transport, which takes about a fifth of the SDK's CPU per call.
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): Provider {
  const baseURL = options.baseURL ?? OPENAI_BASE_URL;
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL,
    // One attempt per call: retries, backoff and fallbacks belong to the router.
    maxRetries: 0,
  });
  const http = createHttpTransport(baseURL, { authorization: `Bearer ${options.apiKey}` });
  return {
    name: options.name,
    hosted: options.hosted,
    async chat(call) {
      const body = toRequest(call);
      if (!call.onDelta) {
        const completion = Completion.parse(
          await http.postJson('/chat/completions', { ...body, stream: false }, call),
        );
        const choice = completion.choices[0];
        return {
          content: choice?.message.content ?? '',
          toolCalls: (choice?.message.tool_calls ?? []).flatMap((toolCall) =>
            toolCall.type === 'function' && toolCall.function
              ? [
                  {
                    id: toolCall.id,
                    name: toolCall.function.name,
                    arguments: parseToolArguments(toolCall.function.arguments),
                  },
                ]
              : [],
          ),
          finishReason: finishReasonOf(choice?.finish_reason),
          model: completion.model ?? call.model,
          usage: {
            inputTokens: completion.usage?.prompt_tokens ?? 0,
            outputTokens: completion.usage?.completion_tokens ?? 0,
          },
        };
      }
      const stream = await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { timeout: call.timeoutMs, signal: call.signal },
      );
      return collectStream(stream, call.onDelta, call.model);
    },
    async embed(call) {
      const response = Embeddings.parse(
        await http.postJson(
          '/embeddings',
          { model: call.model, input: call.texts, encoding_format: 'float' },
          call,
        ),
      );
      const vectors = [...response.data]
        .sort((a, b) => a.index - b.index)
        .map((item) => item.embedding);
      return { vectors, inputTokens: response.usage?.prompt_tokens ?? 0 };
    },
  };
}

// The parts of a chat completion the gateway reads; compatible servers leave some out.
const Completion = z.object({
  model: z.string().optional(),
  choices: z.array(
    z.object({
      message: z.object({
        content: z.string().nullish(),
        tool_calls: z
          .array(
            z.object({
              id: z.string(),
              type: z.string(),
              // Absent on the other tool types (custom tools), which the gateway does not offer.
              function: z.object({ name: z.string(), arguments: z.string() }).optional(),
            }),
          )
          .nullish(),
      }),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number() }).nullish(),
});
const Embeddings = z.object({
  data: z.array(z.object({ index: z.number(), embedding: z.array(z.number()) })),
  usage: z.object({ prompt_tokens: z.number() }).nullish(),
});

type RequestBody = Omit<ChatCompletionCreateParams, 'stream'>;

function toRequest(call: ChatCall): RequestBody {
  const messages: ChatCompletionMessageParam[] = [];
  if (call.system) messages.push({ role: 'system', content: call.system });
  for (const message of call.messages) {
    if (message.role === 'tool') {
      messages.push({ role: 'tool', tool_call_id: message.toolCallId, content: message.content });
    } else if (message.role === 'assistant' && message.toolCalls?.length) {
      messages.push({
        role: 'assistant',
        content: message.content || null,
        tool_calls: message.toolCalls.map((toolCall) => ({
          id: toolCall.id,
          type: 'function',
          function: { name: toolCall.name, arguments: JSON.stringify(toolCall.arguments) },
        })),
      });
    } else {
      messages.push({ role: message.role, content: message.content });
    }
  }
  return {
    model: call.model,
    messages,
    ...(call.maxTokens === undefined ? {} : { max_tokens: call.maxTokens }),
    ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
    ...(call.tools.length === 0
      ? {}
      : {
          tools: call.tools.map((tool) => ({
            type: 'function' as const,
            function: {
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters,
            },
          })),
        }),
    ...(call.toolChoice === undefined ? {} : { tool_choice: toolChoiceOf(call.toolChoice) }),
    ...(call.jsonSchema === undefined
      ? {}
      : {
          response_format: {
            type: 'json_schema' as const,
            // Not strict: strict mode rejects common schemas (optional properties, formats).
            // The gateway validates the answer itself.
            json_schema: { name: call.jsonSchema.name, schema: call.jsonSchema.schema },
          },
        }),
  };
}

function toolChoiceOf(choice: NonNullable<ChatCall['toolChoice']>): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  return { type: 'function', function: { name: choice.name } };
}

function finishReasonOf(reason: string | null | undefined): FinishReason {
  if (reason === 'stop') return 'stop';
  if (reason === 'length') return 'length';
  if (reason === 'tool_calls' || reason === 'function_call') return 'tool_calls';
  if (reason === 'content_filter') return 'content_filter';
  return 'other';
}

type PartialToolCall = { id: string; name: string; arguments: string };

async function collectStream(
  stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
  onDelta: (text: string) => void,
  requestedModel: string,
): Promise<ChatResult> {
  let content = '';
  let model = requestedModel;
  let finishReason: FinishReason = 'other';
  let usage = { inputTokens: 0, outputTokens: 0 };
  // Tool calls come in pieces, keyed by their index in the choice.
  const partials = new Map<number, PartialToolCall>();
  for await (const chunk of stream) {
    model = chunk.model || model;
    if (chunk.usage) {
      usage = {
        inputTokens: chunk.usage.prompt_tokens,
        outputTokens: chunk.usage.completion_tokens,
      };
    }
    const choice = chunk.choices[0];
    if (!choice) continue;
    if (choice.delta.content) {
      content += choice.delta.content;
      onDelta(choice.delta.content);
    }
    for (const piece of choice.delta.tool_calls ?? []) {
      const partial = partials.get(piece.index) ?? { id: '', name: '', arguments: '' };
      partial.id ||= piece.id ?? '';
      partial.name += piece.function?.name ?? '';
      partial.arguments += piece.function?.arguments ?? '';
      partials.set(piece.index, partial);
    }
    if (choice.finish_reason) finishReason = finishReasonOf(choice.finish_reason);
  }
  const toolCalls: ToolCall[] = [...partials.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, partial]) => ({
      id: partial.id || `call_${index}`,
      name: partial.name,
      arguments: parseToolArguments(partial.arguments),
    }));
  return { content, toolCalls, finishReason, model, usage };
}
