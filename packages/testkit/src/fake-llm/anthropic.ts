import type { ServerResponse } from 'node:http';
import { endStream, sendJson, startStream, writeSseEvent } from './http-io';
import {
  extractAllText,
  findLastUserText,
  measureMessages,
  parseChatBasics,
  splitInHalf,
  splitWords,
} from './messages';
import type { ChatAnswer, ChatInput, ChatProtocol, FakeError, Parsed } from './types';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export function describeAnthropicError(error: FakeError): unknown {
  const type =
    ERROR_TYPES[error.status] ?? (error.status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message: error.message } };
}

function parseAnthropicMessages(body: unknown): Parsed<ChatInput> {
  const basics = parseChatBasics(body);
  if (!basics.ok) return basics;
  const { model, messages } = basics.value;
  const system = extractAllText(basics.value.body.system);
  const conversation = measureMessages(messages);
  return {
    ok: true,
    value: {
      model,
      stream: basics.value.body.stream === true,
      includeUsage: true,
      lastUserText: findLastUserText(messages),
      inputText: system === '' ? conversation : `${system}\n${conversation}`,
    },
  };
}

type Block =
  | { type: 'text'; text: string; citations: null }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

function buildBlocks(answer: ChatAnswer): Block[] {
  const toolBlocks: Block[] = answer.toolCalls.map((call, index) => ({
    type: 'tool_use',
    id: call.id ?? `toolu_fake_${answer.seq}_${index}`,
    name: call.name,
    input: call.arguments,
  }));
  const hasText = answer.content !== '' || toolBlocks.length === 0;
  return hasText
    ? [{ type: 'text', text: answer.content, citations: null }, ...toolBlocks]
    : toolBlocks;
}

function respondAnthropicMessages(res: ServerResponse, input: ChatInput, answer: ChatAnswer): void {
  const blocks = buildBlocks(answer);
  const stopReason = answer.toolCalls.length > 0 ? 'tool_use' : 'end_turn';
  const message = {
    id: `msg_fake_${answer.seq}`,
    type: 'message',
    role: 'assistant',
    model: answer.model,
    stop_sequence: null,
  };
  const usage = {
    input_tokens: answer.usage.inputTokens,
    output_tokens: answer.usage.outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };

  if (!input.stream) {
    sendJson(res, 200, { ...message, content: blocks, stop_reason: stopReason, usage });
    return;
  }

  startStream(res, 'text/event-stream');
  writeSseEvent(res, 'message_start', {
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 0 } },
  });
  writeSseEvent(res, 'ping', { type: 'ping' });
  blocks.forEach((block, index) => {
    const start = block.type === 'text' ? { ...block, text: '' } : { ...block, input: {} };
    writeSseEvent(res, 'content_block_start', {
      type: 'content_block_start',
      index,
      content_block: start,
    });
    const deltas =
      block.type === 'text'
        ? splitWords(block.text).map((text) => ({ type: 'text_delta', text }))
        : splitInHalf(JSON.stringify(block.input)).map((partial_json) => ({
            type: 'input_json_delta',
            partial_json,
          }));
    for (const delta of deltas) {
      writeSseEvent(res, 'content_block_delta', { type: 'content_block_delta', index, delta });
    }
    writeSseEvent(res, 'content_block_stop', { type: 'content_block_stop', index });
  });
  writeSseEvent(res, 'message_delta', {
    type: 'message_delta',
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  writeSseEvent(res, 'message_stop', { type: 'message_stop' });
  endStream(res);
}

export const anthropicMessages: ChatProtocol = {
  format: 'anthropic',
  parse: parseAnthropicMessages,
  respond: respondAnthropicMessages,
};
