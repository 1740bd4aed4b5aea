import Anthropic, { APIError as AnthropicApiError } from '@anthropic-ai/sdk';
import OpenAI, { APIConnectionTimeoutError, APIError as OpenAiApiError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FakeLlm } from './fake-llm';
import { computeFakeEmbedding, startFakeLlm } from './fake-llm';
import { isRecord } from './fake-llm/messages';

let fake: FakeLlm;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  fake = await startFakeLlm({ models: ['configured-model'] });
  openai = new OpenAI({ apiKey: 'test', baseURL: fake.openaiBaseUrl, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: 'test', baseURL: fake.url, maxRetries: 0 });
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  fake.reset();
});

async function catchError(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the promise to reject');
}

function postJson(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

function readNdjson(text: string): unknown[] {
  return text
    .trim()
    .split('\n')
    .map((line): unknown => JSON.parse(line));
}

function norm(vector: number[]): number {
  return Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
}

const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

describe('OpenAI chat completions', () => {
  it('answers with the default reply, echoing the model and estimating usage', async () => {
    const completion = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'hello there' },
      ],
    });

    expect(completion.model).toBe('gpt-test');
    expect(completion.choices[0]?.message.content).toBe('fake reply to: hello there');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    // "You are terse.\nhello there" is 26 chars; "fake reply to: hello there" is 26 chars.
    expect(completion.usage).toEqual({ prompt_tokens: 7, completion_tokens: 7, total_tokens: 14 });
  });

  it('uses the last user message, including array content parts', async () => {
    const completion = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'text', text: 'second' }] },
      ],
    });

    expect(completion.choices[0]?.message.content).toBe('fake reply to: second');
  });

  it('streams text in several deltas and ends with a usage chunk', async () => {
    fake.script({ content: 'one two three four', usage: { inputTokens: 11, outputTokens: 4 } });
    const stream = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'count' }],
      stream: true,
      stream_options: { include_usage: true },
    });

    const deltas: string[] = [];
    const finishReasons: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finishReasons.push(choice.finish_reason);
      if (chunk.usage) usage = chunk.usage;
    }

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('one two three four');
    expect(finishReasons).toEqual(['stop']);
    expect(usage).toEqual({ prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 });
  });

  it('returns scripted tool calls without streaming', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
    const completion = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [weatherTool],
    });

    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    expect(call?.id).toMatch(/^call_/);
    if (call?.type !== 'function') throw new Error('expected a function tool call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris' });
  });

  it('streams tool calls that the SDK stream helper accumulates', async () => {
    fake.script({
      content: 'Checking both.',
      toolCalls: [
        { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' } },
        { name: 'get_weather', arguments: { city: 'Oslo', units: 'metric' } },
      ],
    });
    const stream = openai.chat.completions.stream({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [weatherTool],
    });
    const completion = await stream.finalChatCompletion();

    const message = completion.choices[0]?.message;
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message?.content).toBe('Checking both.');
    const calls = (message?.tool_calls ?? []).map((call) =>
      call.type === 'function'
        ? { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) }
        : undefined,
    );
    expect(calls).toEqual([
      { id: 'call_a', name: 'get_weather', args: { city: 'Paris' } },
      {
        id: expect.stringMatching(/^call_/),
        name: 'get_weather',
        args: { city: 'Oslo', units: 'metric' },
      },
    ]);
  });

  it('surfaces a scripted error status as an APIError with retry-after', async () => {
    fake.script({ status: 429, errorMessage: 'slow down', retryAfterSeconds: 7 });
    const error = await catchError(
      openai.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );

    expect(error).toBeInstanceOf(OpenAiApiError);
    if (!(error instanceof OpenAiApiError)) return;
    expect(error.status).toBe(429);
    expect(error.message).toContain('slow down');
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it('times out on a delayed reply', async () => {
    fake.script({ delayMs: 2_000 });
    const impatient = new OpenAI({
      apiKey: 'test',
      baseURL: fake.openaiBaseUrl,
      maxRetries: 0,
      timeout: 50,
    });

    const error = await catchError(
      impatient.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );

    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    // The server is still healthy afterwards.
    const completion = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'still there?' }],
    });
    expect(completion.choices[0]?.message.content).toBe('fake reply to: still there?');
  });

  it('lists seen and configured models', async () => {
    await openai.chat.completions.create({
      model: 'gpt-seen',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const ids: string[] = [];
    for await (const model of openai.models.list()) ids.push(model.id);

    expect(ids).toEqual(['configured-model', 'gpt-seen']);
  });
});

describe('OpenAI embeddings', () => {
  it('serves deterministic normalised vectors through the default base64 path', async () => {
    const response = await openai.embeddings.create({
      model: 'text-embedding-test',
      input: ['alpha', 'beta'],
    });

    expect(fake.requests[0]?.body).toMatchObject({ encoding_format: 'base64' });
    const [alpha, beta] = response.data.map((item) => item.embedding);
    expect(alpha).toHaveLength(16);
    expect(alpha).toEqual(computeFakeEmbedding('alpha'));
    expect(beta).toEqual(computeFakeEmbedding('beta'));
    expect(alpha).not.toEqual(beta);
    expect(norm(alpha ?? [])).toBeCloseTo(1, 5);
    expect(response.model).toBe('text-embedding-test');
    expect(response.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('honours dimensions and the float encoding', async () => {
    const response = await openai.embeddings.create({
      model: 'text-embedding-test',
      input: 'alpha',
      dimensions: 8,
      encoding_format: 'float',
    });

    const vector = response.data[0]?.embedding ?? [];
    expect(vector).toHaveLength(8);
    expect(vector).toEqual(computeFakeEmbedding('alpha', 8));
    expect(norm(vector)).toBeCloseTo(1, 5);
  });
});

describe('Anthropic messages', () => {
  it('answers a message with end_turn and usage', async () => {
    const message = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi claude' }] }],
    });

    expect(message.model).toBe('claude-test');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([
      { type: 'text', text: 'fake reply to: hi claude', citations: null },
    ]);
    // "Be brief.\nhi claude" is 19 chars; "fake reply to: hi claude" is 24 chars.
    expect(message.usage).toMatchObject({ input_tokens: 5, output_tokens: 6 });
  });

  it('streams text deltas into the final message', async () => {
    fake.script({ content: 'streamed words arrive here' });
    const stream = anthropic.messages.stream({
      model: 'claude-test',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'go' }],
    });
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const message = await stream.finalMessage();

    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('streamed words arrive here');
    expect(message.content).toMatchObject([{ type: 'text', text: 'streamed words arrive here' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(7);
  });

  it('returns tool_use blocks without streaming', async () => {
    fake.script({
      content: 'Let me check.',
      toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Rome' } }],
    });
    const message = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'weather?' }],
    });

    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Let me check.', citations: null },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } },
    ]);
  });

  it('streams tool_use input as partial JSON', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Rome', days: 3 } }] });
    const message = await anthropic.messages
      .stream({
        model: 'claude-test',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'weather?' }],
      })
      .finalMessage();

    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toHaveLength(1);
    expect(message.content[0]).toMatchObject({
      type: 'tool_use',
      id: expect.stringMatching(/^toolu_/),
      name: 'get_weather',
      input: { city: 'Rome', days: 3 },
    });
  });

  it('surfaces a scripted error in the Anthropic error shape', async () => {
    fake.script({ status: 529, errorMessage: 'Overloaded' });
    const error = await catchError(
      anthropic.messages.create({
        model: 'claude-test',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );

    expect(error).toBeInstanceOf(AnthropicApiError);
    if (!(error instanceof AnthropicApiError)) return;
    expect(error.status).toBe(529);
    expect(error.error).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });
});

describe('Ollama API', () => {
  it('answers /api/chat without streaming, with tool calls', async () => {
    fake.script({ toolCalls: [{ name: 'get_weather', arguments: { city: 'Lima' } }] });
    const response = await postJson('/api/chat', {
      model: 'llama-test',
      stream: false,
      messages: [{ role: 'user', content: 'weather?' }],
    });
    const body: unknown = await response.json();

    expect(response.status).toBe(200);
    expect(body).toMatchObject({
      model: 'llama-test',
      done: true,
      message: {
        role: 'assistant',
        content: '',
        tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Lima' } } }],
      },
    });
  });

  it('streams /api/chat as NDJSON', async () => {
    const response = await postJson('/api/chat', {
      model: 'llama-test',
      messages: [{ role: 'user', content: 'hello ollama' }],
    });
    const lines = readNdjson(await response.text());
    const pieces = lines.map((line) =>
      isRecord(line) && isRecord(line.message) ? line.message.content : undefined,
    );

    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    expect(lines.length).toBeGreaterThan(2);
    expect(pieces.join('')).toBe('fake reply to: hello ollama');
    expect(lines.at(-1)).toMatchObject({ done: true, done_reason: 'stop' });
    expect(lines.slice(0, -1).every((line) => isRecord(line) && line.done === false)).toBe(true);
  });

  it('embeds via /api/embed and the legacy /api/embeddings', async () => {
    const embed = await postJson('/api/embed', { model: 'nomic-test', input: ['a', 'b'] });
    const legacy = await postJson('/api/embeddings', { model: 'nomic-test', prompt: 'a' });

    expect(await embed.json()).toEqual({
      model: 'nomic-test',
      embeddings: [computeFakeEmbedding('a'), computeFakeEmbedding('b')],
      total_duration: expect.any(Number),
      load_duration: expect.any(Number),
      prompt_eval_count: 2,
    });
    expect(await legacy.json()).toEqual({ embedding: computeFakeEmbedding('a') });
  });

  it('lists configured and seen models in /api/tags', async () => {
    await postJson('/api/embed', { model: 'nomic-test', input: 'a' });
    const response = await fetch(`${fake.url}/api/tags`);
    const body: unknown = await response.json();
    const names =
      isRecord(body) && Array.isArray(body.models)
        ? body.models.map((model) => (isRecord(model) ? model.name : undefined))
        : [];

    expect(names).toEqual(['configured-model', 'nomic-test']);
  });

  it('answers a scripted error as {error}', async () => {
    fake.script({ status: 503, errorMessage: 'busy', retryAfterSeconds: 2 });
    const response = await postJson('/api/chat', {
      model: 'llama-test',
      messages: [{ role: 'user', content: 'hi' }],
    });

    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await response.json()).toEqual({ error: 'busy' });
  });
});

describe('scripting and recording', () => {
  it('consumes scripted replies in order across formats, then falls back to onChat', async () => {
    fake.script({ content: 'first' }, { content: 'second' });
    fake.onChat((request) => ({ content: `fallback for ${request.format}` }));

    const first = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'a' }],
    });
    const second = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'b' }],
    });
    const third = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'c' }],
    });

    expect(first.choices[0]?.message.content).toBe('first');
    expect(second.content[0]).toMatchObject({ text: 'second' });
    expect(third.content[0]).toMatchObject({ text: 'fallback for anthropic' });
  });

  it('records every request with its body and headers', async () => {
    await openai.embeddings.create({ model: 'emb', input: 'x' });
    await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'recorded' }],
    });

    expect(fake.requests.map((request) => [request.format, request.kind, request.path])).toEqual([
      ['openai', 'embeddings', '/v1/embeddings'],
      ['anthropic', 'chat', '/v1/messages'],
    ]);
    const [chat] = fake.chatRequests();
    expect(chat?.body).toEqual({
      model: 'claude-test',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'recorded' }],
    });
    expect(chat?.headers['anthropic-version']).toEqual(expect.any(String));
    expect(fake.requests[0]?.headers.authorization).toBe('Bearer test');
    expect(chat?.receivedAt).toBeGreaterThan(0);

    fake.reset();
    expect(fake.requests).toEqual([]);
  });

  it('holds the next chat request until released while others pass', async () => {
    const gate = fake.hold();
    const finished: string[] = [];
    const held = openai.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'held' }] })
      .then((completion) => finished.push(completion.choices[0]?.message.content ?? ''));

    const reached = await gate.reached;
    expect(reached.body).toMatchObject({ messages: [{ role: 'user', content: 'held' }] });

    await openai.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'free' }] })
      .then((completion) => finished.push(completion.choices[0]?.message.content ?? ''));
    expect(finished).toEqual(['fake reply to: free']);

    gate.release();
    await held;
    expect(finished).toEqual(['fake reply to: free', 'fake reply to: held']);
  });

  it('survives a client that disconnects while held', async () => {
    const gate = fake.hold();
    const controller = new AbortController();
    const aborted = catchError(
      postJson(
        '/api/chat',
        { model: 'llama-test', stream: false, messages: [{ role: 'user', content: 'bye' }] },
        controller.signal,
      ),
    );
    await gate.reached;
    controller.abort();
    expect(await aborted).toMatchObject({ name: 'AbortError' });
    gate.release();

    const response = await postJson('/api/chat', {
      model: 'llama-test',
      stream: false,
      messages: [{ role: 'user', content: 'next' }],
    });
    expect(await response.json()).toMatchObject({ message: { content: 'fake reply to: next' } });
  });

  it('closes promptly with a request still held', async () => {
    const other = await startFakeLlm();
    const gate = other.hold();
    const pending = catchError(
      fetch(`${other.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      }),
    );
    await gate.reached;

    await other.close();
    expect(await pending).toBeInstanceOf(Error);
  });

  it('answers a failing reply function with a 500', async () => {
    fake.onChat(() => {
      throw new Error('boom');
    });
    const error = await catchError(
      openai.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'x' }],
      }),
    );

    expect(error).toBeInstanceOf(OpenAiApiError);
    expect(error).toMatchObject({ status: 500 });
  });

  it('rejects unknown routes and invalid bodies', async () => {
    const unknown = await fetch(`${fake.url}/v1/nope`);
    const invalid = await fetch(`${fake.url}/v1/chat/completions`, {
      method: 'POST',
      body: '{not json',
    });
    const missing = await postJson('/v1/messages', { model: 'claude-test' });

    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { message: expect.any(String) } });
    expect(invalid.status).toBe(400);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
  });
});
