import type { FinishReason, ToolCall } from '@jarvis/contracts';
import {
  type ChatRequest,
  type ChatResponse,
  type Message,
  Ollama,
  type ToolCall as OllamaToolCall,
  type Tool,
} from 'ollama';
import {
  type ChatCall,
  type ChatResult,
  type Provider,
  parseToolArguments,
  withTimeout,
} from './provider';
import { fromHttpResponse } from './provider-error';

// Ollama's own API (/api/chat, /api/embed) through the `ollama` library, not its
// OpenAI-compatible endpoint: only the own API takes the context window (`num_ctx`), without
// which Ollama runs a small default and drops the start of a long prompt, and a JSON schema as
// `format`.
export function createOllamaProvider(options: { baseUrl: string; numCtx: number }): Provider {
  const { host, headers } = splitCredentials(options.baseUrl);
  // A client per call: the library takes no signal per request, only a fetch per client, and
  // the signal is what cancels a call or ends it at its timeout.
  const clientFor = (signal: AbortSignal) =>
    new Ollama({
      host,
      headers,
      fetch: (input, init) =>
        fetchOrFail(input, {
          ...init,
          signal: init?.signal ? AbortSignal.any([init.signal, signal]) : signal,
        }),
    });
  return {
    name: 'ollama',
    hosted: false,
    chat: (call) =>
      withTimeout(call, async (signal) => {
        const client = clientFor(signal);
        const request = toRequest(call, options.numCtx);
        if (!call.onDelta) {
          return toResult(await client.chat({ ...request, stream: false }), call.model);
        }
        const stream = await client.chat({ ...request, stream: true });
        return collectStream(stream, call.onDelta, call.model);
      }),
    embed: (call) =>
      withTimeout(call, async (signal) => {
        const body = await clientFor(signal).embed({ model: call.model, input: call.texts });
        return { vectors: body.embeddings, inputTokens: body.prompt_eval_count ?? 0 };
      }),
  };
}

// A base URL's user and password (a proxy in front of Ollama) go as Basic auth: fetch refuses a
// URL that carries them, and names the URL, password included, in the error it throws.
function splitCredentials(baseUrl: string): { host: string; headers: Record<string, string> } {
  const url = new URL(baseUrl);
  if (!url.username && !url.password) return { host: baseUrl, headers: {} };
  const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = '';
  url.password = '';
  return {
    host: url.href,
    headers: { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` },
  };
}

// An error answer becomes the router's ProviderError here, before the library sees it: the
// library keeps neither the Retry-After header nor quiet (it logs a page that is not JSON to the
// console).
async function fetchOrFail(input: string | URL | Request, init: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  if (response.ok) return response;
  throw fromHttpResponse(
    response.status,
    await response.text(),
    response.headers.get('retry-after') ?? undefined,
  );
}

function toRequest(call: ChatCall, numCtx: number): Omit<ChatRequest, 'stream'> {
  const messages: Message[] = [];
  if (call.system) messages.push({ role: 'system', content: call.system });
  for (const message of call.messages) {
    if (message.role === 'tool') {
      messages.push({ role: 'tool', content: message.content });
    } else if (message.role === 'assistant' && message.toolCalls?.length) {
      messages.push({
        role: 'assistant',
        content: message.content,
        tool_calls: message.toolCalls.map((toolCall) => ({
          function: { name: toolCall.name, arguments: toolCall.arguments },
        })),
      });
    } else {
      messages.push({ role: message.role, content: message.content });
    }
  }
  // Ollama has no tool_choice: "none" is honoured by sending no tools, a named tool by sending
  // only that one.
  const choice = call.toolChoice;
  const tools =
    choice === 'none'
      ? []
      : call.tools.filter((tool) => typeof choice !== 'object' || tool.name === choice.name);
  return {
    model: call.model,
    messages,
    ...(tools.length === 0
      ? {}
      : {
          tools: tools.map(
            (tool): Tool => ({
              type: 'function',
              function: {
                name: tool.name,
                description: tool.description,
                // The caller's JSON Schema as it came; the library's type names only a few of
                // its keywords.
                parameters: tool.parameters as NonNullable<Tool['function']['parameters']>,
              },
            }),
          ),
        }),
    ...(call.jsonSchema === undefined ? {} : { format: call.jsonSchema.schema }),
    options: {
      num_ctx: numCtx,
      ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
      ...(call.maxTokens === undefined ? {} : { num_predict: call.maxTokens }),
    },
  };
}

function toResult(response: ChatResponse, requestedModel: string): ChatResult {
  const toolCalls = toToolCalls(response.message?.tool_calls ?? [], 0);
  return {
    content: response.message?.content ?? '',
    toolCalls,
    finishReason: finishReasonOf(response.done_reason, toolCalls.length > 0),
    model: response.model ?? requestedModel,
    usage: usageOf(response),
  };
}

// Ollama leaves a count out when it is zero (a prompt it had cached).
function usageOf(response: Partial<ChatResponse>): ChatResult['usage'] {
  return { inputTokens: response.prompt_eval_count ?? 0, outputTokens: response.eval_count ?? 0 };
}

// Ollama gives tool calls no ids; the gateway numbers them so results can refer back.
function toToolCalls(calls: OllamaToolCall[], offset: number): ToolCall[] {
  return calls.map((call, index) => {
    const args: unknown = call.function.arguments;
    return {
      id: `call_${offset + index}`,
      name: call.function.name,
      arguments:
        typeof args === 'string'
          ? parseToolArguments(args)
          : parseToolArguments(JSON.stringify(args ?? {})),
    };
  });
}

function finishReasonOf(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  if (hasToolCalls) return 'tool_calls';
  if (reason === 'stop' || reason === undefined) return 'stop';
  if (reason === 'length') return 'length';
  return 'other';
}

// Text pieces, tool calls, then a last part with the counts.
async function collectStream(
  stream: AsyncIterable<ChatResponse>,
  onDelta: (text: string) => void,
  requestedModel: string,
): Promise<ChatResult> {
  let content = '';
  const toolCalls: ToolCall[] = [];
  let last: Partial<ChatResponse> = {};
  for await (const part of stream) {
    const piece = part.message?.content ?? '';
    if (piece) {
      content += piece;
      onDelta(piece);
    }
    toolCalls.push(...toToolCalls(part.message?.tool_calls ?? [], toolCalls.length));
    if (part.done) last = part;
  }
  return {
    content,
    toolCalls,
    finishReason: finishReasonOf(last.done_reason, toolCalls.length > 0),
    model: last.model ?? requestedModel,
    usage: usageOf(last),
  };
}
