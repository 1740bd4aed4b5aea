import type { FinishReason, ToolCall } from '@jarvis/contracts';
import { z } from 'zod';
import { createHttpTransport } from './http-transport';
import { type ChatCall, type ChatResult, type Provider, parseToolArguments } from './provider';

// Ollama's own API (/api/chat, /api/embed): it takes a JSON schema as `format`, which its
// OpenAI-compatible endpoint does not, and reports token counts on every answer.
export function createOllamaProvider(options: { baseUrl: string; numCtx: number }): Provider {
  const http = createHttpTransport(options.baseUrl, {});
  return {
    name: 'ollama',
    hosted: false,
    async chat(call) {
      const body = toRequest(call, options.numCtx);
      if (!call.onDelta) {
        return toResult(
          OllamaChatLine.parse(await http.postJson('/api/chat', body, call)),
          call.model,
        );
      }
      return collectStream(
        await http.postStream('/api/chat', body, call),
        call.onDelta,
        call.model,
      );
    },
    async embed(call) {
      const body = OllamaEmbedResponse.parse(
        await http.postJson('/api/embed', { model: call.model, input: call.texts }, call),
      );
      return { vectors: body.embeddings, inputTokens: body.prompt_eval_count ?? 0 };
    },
  };
}

const OllamaToolCall = z.object({
  function: z.object({ name: z.string(), arguments: z.unknown() }),
});
const OllamaChatLine = z.object({
  model: z.string().optional(),
  message: z
    .object({ content: z.string().default(''), tool_calls: z.array(OllamaToolCall).optional() })
    .optional(),
  done: z.boolean().optional(),
  done_reason: z.string().optional(),
  prompt_eval_count: z.number().optional(),
  eval_count: z.number().optional(),
});
type OllamaChatLine = z.infer<typeof OllamaChatLine>;
const OllamaEmbedResponse = z.object({
  embeddings: z.array(z.array(z.number())),
  prompt_eval_count: z.number().optional(),
});

function toRequest(call: ChatCall, numCtx: number): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [];
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
  const options: Record<string, number> = { num_ctx: numCtx };
  if (call.temperature !== undefined) options.temperature = call.temperature;
  if (call.maxTokens !== undefined) options.num_predict = call.maxTokens;
  return {
    model: call.model,
    messages,
    stream: call.onDelta !== undefined,
    ...(tools.length === 0
      ? {}
      : {
          tools: tools.map((tool) => ({
            type: 'function',
            function: {
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters,
            },
          })),
        }),
    ...(call.jsonSchema === undefined ? {} : { format: call.jsonSchema.schema }),
    options,
  };
}

function toResult(line: OllamaChatLine, requestedModel: string): ChatResult {
  const toolCalls = toToolCalls(line.message?.tool_calls ?? [], 0);
  return {
    content: line.message?.content ?? '',
    toolCalls,
    finishReason: finishReasonOf(line.done_reason, toolCalls.length > 0),
    model: line.model ?? requestedModel,
    usage: { inputTokens: line.prompt_eval_count ?? 0, outputTokens: line.eval_count ?? 0 },
  };
}

// Ollama gives tool calls no ids; the gateway numbers them so results can refer back.
function toToolCalls(calls: z.infer<typeof OllamaToolCall>[], offset: number): ToolCall[] {
  return calls.map((call, index) => ({
    id: `call_${offset + index}`,
    name: call.function.name,
    arguments:
      typeof call.function.arguments === 'string'
        ? parseToolArguments(call.function.arguments)
        : parseToolArguments(JSON.stringify(call.function.arguments ?? {})),
  }));
}

function finishReasonOf(reason: string | undefined, hasToolCalls: boolean): FinishReason {
  if (hasToolCalls) return 'tool_calls';
  if (reason === 'stop' || reason === undefined) return 'stop';
  if (reason === 'length') return 'length';
  return 'other';
}

// Newline-delimited JSON: text pieces, tool calls, then a last line with the counts.
async function collectStream(
  body: AsyncIterable<string>,
  onDelta: (text: string) => void,
  requestedModel: string,
): Promise<ChatResult> {
  let content = '';
  const toolCalls: ToolCall[] = [];
  let last: OllamaChatLine = {};
  let buffered = '';
  const handle = (text: string) => {
    if (text.trim() === '') return;
    const line = OllamaChatLine.parse(JSON.parse(text));
    const piece = line.message?.content ?? '';
    if (piece) {
      content += piece;
      onDelta(piece);
    }
    toolCalls.push(...toToolCalls(line.message?.tool_calls ?? [], toolCalls.length));
    if (line.done) last = line;
  };
  for await (const chunk of body) {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      handle(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  }
  handle(buffered);
  return {
    content,
    toolCalls,
    finishReason: finishReasonOf(last.done_reason, toolCalls.length > 0),
    model: last.model ?? requestedModel,
    usage: { inputTokens: last.prompt_eval_count ?? 0, outputTokens: last.eval_count ?? 0 },
  };
}
