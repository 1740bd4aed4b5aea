import type { FinishReason, ToolCall } from '@jarvis/contracts';
import OpenAI from 'openai';
import type {
  ChatCompletionCreateParams,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import {
  type ChatCall,
  type ChatResult,
  type Provider,
  parseToolArguments,
  withTimeout,
} from './provider';
import { errorMessageOf } from './provider-error';

export type OpenAiCompatibleOptions = {
  name: string;
  baseURL: string | undefined;
  apiKey: string;
  hosted: boolean;
};

// OpenAI itself, and any other server that speaks the same API (vLLM, LM Studio, llama.cpp).
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): Provider {
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    // One attempt per call: retries, backoff and fallbacks belong to the router.
    maxRetries: 0,
    fetch: fetchWithOpenAiErrors,
  });
  return {
    name: options.name,
    hosted: options.hosted,
    chat: (call) =>
      withTimeout(call, async (signal) => {
        const body = toRequest(call);
        if (!call.onDelta) {
          const completion = await client.chat.completions.create(
            { ...body, stream: false },
            { signal },
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
            // Compatible servers leave some fields out.
            model: completion.model ?? call.model,
            usage: {
              inputTokens: completion.usage?.prompt_tokens ?? 0,
              outputTokens: completion.usage?.completion_tokens ?? 0,
            },
          };
        }
        const stream = await client.chat.completions.create(
          { ...body, stream: true, stream_options: { include_usage: true } },
          { signal },
        );
        return collectStream(stream, call.onDelta, call.model);
      }),
    embed: (call) =>
      withTimeout(call, async (signal) => {
        const response = await client.embeddings.create(
          { model: call.model, input: call.texts, encoding_format: 'float' },
          { signal },
        );
        const vectors = [...response.data]
          .sort((a, b) => a.index - b.index)
          .map((item) => item.embedding);
        return { vectors, inputTokens: response.usage?.prompt_tokens ?? 0 };
      }),
  };
}

// The SDK reads an error's message only from OpenAI's shape (`{error: {message}}`). Compatible
// servers answer in their own (vLLM `{message}`, others `{error: "…"}` or a proxy's text page),
// so error answers are put into OpenAI's shape first: without the provider's text a context-length
// refusal looks like any other bad request, and the router would send the same prompt on.
async function fetchWithOpenAiErrors(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const response = await fetch(input, init);
  if (response.ok) return response;
  const message = errorMessageOf(await response.text()) ?? `HTTP ${response.status}`;
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  headers.set('content-type', 'application/json');
  return new Response(JSON.stringify({ error: { message } }), {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

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
