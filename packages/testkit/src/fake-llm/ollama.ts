import type { ServerResponse } from 'node:http';
import { endStream, sendJson, startStream, writeChunk } from './http-io';
import { findLastUserText, measureMessages, parseChatBasics, splitWords } from './messages';
import type { ChatAnswer, ChatInput, ChatProtocol, FakeError, Parsed } from './types';

function parseOllamaChat(body: unknown): Parsed<ChatInput> {
  const basics = parseChatBasics(body);
  if (!basics.ok) return basics;
  const { model, messages } = basics.value;
  return {
    ok: true,
    value: {
      model,
      // Ollama streams unless told not to.
      stream: basics.value.body.stream !== false,
      includeUsage: true,
      lastUserText: findLastUserText(messages),
      inputText: measureMessages(messages),
    },
  };
}

function respondOllamaChat(res: ServerResponse, input: ChatInput, answer: ChatAnswer): void {
  const createdAt = new Date(answer.createdAt).toISOString();
  const toolCalls = answer.toolCalls.map((call) => ({
    function: { name: call.name, arguments: call.arguments },
  }));
  const stats = {
    done: true,
    done_reason: 'stop',
    total_duration: 1000,
    load_duration: 0,
    prompt_eval_count: answer.usage.inputTokens,
    prompt_eval_duration: 500,
    eval_count: answer.usage.outputTokens,
    eval_duration: 500,
  };
  const withToolCalls = toolCalls.length > 0 ? { tool_calls: toolCalls } : {};

  if (!input.stream) {
    sendJson(res, 200, {
      model: answer.model,
      created_at: createdAt,
      message: { role: 'assistant', content: answer.content, ...withToolCalls },
      ...stats,
    });
    return;
  }

  const writeLine = (line: unknown) => writeChunk(res, `${JSON.stringify(line)}\n`);
  startStream(res, 'application/x-ndjson');
  for (const piece of splitWords(answer.content)) {
    writeLine({
      model: answer.model,
      created_at: createdAt,
      message: { role: 'assistant', content: piece },
      done: false,
    });
  }
  if (toolCalls.length > 0) {
    writeLine({
      model: answer.model,
      created_at: createdAt,
      message: { role: 'assistant', content: '', tool_calls: toolCalls },
      done: false,
    });
  }
  writeLine({
    model: answer.model,
    created_at: createdAt,
    message: { role: 'assistant', content: '' },
    ...stats,
  });
  endStream(res);
}

export const ollamaChat: ChatProtocol = {
  format: 'ollama',
  parse: parseOllamaChat,
  respond: respondOllamaChat,
};

export function listOllamaModels(models: string[], createdAt: number): unknown {
  const modifiedAt = new Date(createdAt).toISOString();
  return {
    models: models.map((name) => ({
      name,
      model: name,
      modified_at: modifiedAt,
      size: 0,
      digest: 'fake',
      details: {
        parent_model: '',
        format: 'gguf',
        family: 'fake',
        families: ['fake'],
        parameter_size: '0B',
        quantization_level: 'F16',
      },
    })),
  };
}

export function describeOllamaError(error: FakeError): unknown {
  return { error: error.message };
}
