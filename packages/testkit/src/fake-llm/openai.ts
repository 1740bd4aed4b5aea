import type { ServerResponse } from 'node:http';
import { endStream, sendJson, startStream, writeSseData } from './http-io';
import {
  findLastUserText,
  isRecord,
  measureMessages,
  parseChatBasics,
  splitInHalf,
  splitWords,
} from './messages';
import type { ChatAnswer, ChatInput, ChatProtocol, FakeError, Parsed } from './types';

const ERROR_KINDS: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
  500: { type: 'server_error', code: null },
  503: { type: 'server_error', code: 'service_unavailable' },
};

export function describeOpenAiError(error: FakeError): unknown {
  const kind = ERROR_KINDS[error.status] ?? {
    type: error.status >= 500 ? 'server_error' : 'invalid_request_error',
    code: null,
  };
  return { error: { message: error.message, type: kind.type, param: null, code: kind.code } };
}

function parseOpenAiChat(body: unknown): Parsed<ChatInput> {
  const basics = parseChatBasics(body);
  if (!basics.ok) return basics;
  const { model, messages } = basics.value;
  const streamOptions = basics.value.body.stream_options;
  return {
    ok: true,
    value: {
      model,
      stream: basics.value.body.stream === true,
      includeUsage: isRecord(streamOptions) && streamOptions.include_usage === true,
      lastUserText: findLastUserText(messages),
      inputText: measureMessages(messages),
    },
  };
}

function respondOpenAiChat(res: ServerResponse, input: ChatInput, answer: ChatAnswer): void {
  const id = `chatcmpl-fake-${answer.seq}`;
  const created = Math.floor(answer.createdAt / 1000);
  const toolCalls = answer.toolCalls.map((call, index) => ({
    id: call.id ?? `call_fake_${answer.seq}_${index}`,
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.arguments) },
  }));
  const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const usage = {
    prompt_tokens: answer.usage.inputTokens,
    completion_tokens: answer.usage.outputTokens,
    total_tokens: answer.usage.inputTokens + answer.usage.outputTokens,
  };

  if (!input.stream) {
    const hasText = answer.content !== '' || toolCalls.length === 0;
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: answer.model,
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: hasText ? answer.content : null,
            refusal: null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: finishReason,
        },
      ],
      usage,
    });
    return;
  }

  const writeChunk = (delta: Record<string, unknown>, reason: string | null) =>
    writeSseData(res, {
      id,
      object: 'chat.completion.chunk',
      created,
      model: answer.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
      // Real streams carry `usage: null` on every chunk when usage was requested.
      ...(input.includeUsage ? { usage: null } : {}),
    });

  startStream(res, 'text/event-stream');
  writeChunk({ role: 'assistant', content: '', refusal: null }, null);
  for (const piece of splitWords(answer.content)) writeChunk({ content: piece }, null);
  toolCalls.forEach((call, index) => {
    writeChunk(
      {
        tool_calls: [
          {
            index,
            id: call.id,
            type: 'function',
            function: { name: call.function.name, arguments: '' },
          },
        ],
      },
      null,
    );
    for (const piece of splitInHalf(call.function.arguments)) {
      writeChunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null);
    }
  });
  writeChunk({}, finishReason);
  if (input.includeUsage) {
    writeSseData(res, {
      id,
      object: 'chat.completion.chunk',
      created,
      model: answer.model,
      choices: [],
      usage,
    });
  }
  endStream(res, 'data: [DONE]\n\n');
}

export const openAiChat: ChatProtocol = {
  format: 'openai',
  parse: parseOpenAiChat,
  respond: respondOpenAiChat,
};

export function listOpenAiModels(models: string[], createdAt: number): unknown {
  return {
    object: 'list',
    data: models.map((id) => ({
      id,
      object: 'model',
      created: Math.floor(createdAt / 1000),
      owned_by: 'fake-llm',
    })),
  };
}
