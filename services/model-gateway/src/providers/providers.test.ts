import { createServer, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FakeLlm, freePort, startFakeLlm } from '@jarvis/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from './anthropic';
import { createOllamaProvider } from './ollama';
import { createOpenAiCompatibleProvider } from './openai-compatible';
import type { ChatCall, Provider } from './provider';
import { classifyError, type ProviderError } from './provider-error';

let fake: FakeLlm;

beforeAll(async () => {
  fake = await startFakeLlm();
});

beforeEach(() => {
  fake.reset();
});

afterAll(async () => {
  await fake?.close();
});

const openai = (baseURL = fake.openaiBaseUrl) =>
  createOpenAiCompatibleProvider({ name: 'openai', baseURL, apiKey: 'test-key', hosted: true });
const ollama = (baseUrl = fake.url) => createOllamaProvider({ baseUrl, numCtx: 4_096 });

function chatCall(overrides: Partial<ChatCall> = {}): ChatCall {
  return {
    model: 'fake-model',
    system: undefined,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    toolChoice: undefined,
    temperature: undefined,
    maxTokens: undefined,
    jsonSchema: undefined,
    timeoutMs: 5_000,
    signal: new AbortController().signal,
    onDelta: undefined,
    ...overrides,
  };
}

// The failure as the router sees it.
async function failureOf(provider: Provider, call: ChatCall): Promise<ProviderError> {
  const chat = provider.chat;
  if (!chat) throw new Error(`${provider.name} has no chat`);
  try {
    await chat(call);
  } catch (error) {
    return classifyError(error, call.signal);
  }
  throw new Error('the call did not fail');
}

describe.each([
  ['openai', openai],
  ['ollama', ollama],
] as const)('%s without streaming', (name, provider) => {
  it('answers, sending the body as JSON', async () => {
    fake.script({ content: 'Paris.', usage: { inputTokens: 5, outputTokens: 2 } });

    const result = await provider().chat?.(chatCall({ system: 'Be terse.' }));

    expect(result).toMatchObject({
      content: 'Paris.',
      finishReason: 'stop',
      model: 'fake-model',
      usage: { inputTokens: 5, outputTokens: 2 },
    });
    expect(fake.chatRequests()[0]?.headers['content-type']).toBe('application/json');
    expect(JSON.stringify(fake.chatRequests()[0]?.body)).toContain('Be terse.');
  });

  it.each([
    [500, 'server'],
    [503, 'server'],
    [401, 'auth'],
    [403, 'auth'],
    [404, 'not_found'],
    [400, 'bad_request'],
  ])('classifies HTTP %i as %s, with the provider message', async (status, kind) => {
    fake.script({ status, errorMessage: `went wrong ${status}` });

    const failure = await failureOf(provider(), chatCall());

    expect(failure).toMatchObject({ kind, status, message: `went wrong ${status}` });
  });

  it('reads a 429 with its Retry-After', async () => {
    fake.script({ status: 429, retryAfterSeconds: 7, errorMessage: 'slow down' });

    const failure = await failureOf(provider(), chatCall());

    expect(failure).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterMs: 7_000 });
    expect(failure.retryable).toBe(true);
  });

  it('tells a context-length refusal from other bad requests', async () => {
    fake.script({
      status: 400,
      errorMessage: "This model's maximum context length is 8192 tokens",
    });

    const failure = await failureOf(provider(), chatCall());

    expect(failure.kind).toBe('context_length');
  });

  it('times out a model that does not answer in time', async () => {
    fake.script({ delayMs: 3_000 });
    const started = Date.now();

    const failure = await failureOf(provider(), chatCall({ timeoutMs: 200 }));

    expect(failure.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('stops when the caller cancels', async () => {
    const hold = fake.hold();
    const controller = new AbortController();
    const pending = failureOf(provider(), chatCall({ signal: controller.signal }));
    await hold.reached;

    controller.abort();

    expect((await pending).kind).toBe('cancelled');
    hold.release();
  });

  it('reports a refused connection as a network failure', async () => {
    const port = await freePort();

    const failure = await failureOf(
      provider(`http://127.0.0.1:${port}${name === 'openai' ? '/v1' : ''}`),
      chatCall(),
    );

    expect(failure.kind).toBe('network');
    expect(failure.retryable).toBe(true);
  });
});

describe('openai without streaming', () => {
  it('sends the key and returns tool calls', async () => {
    fake.script({
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Oslo' } }],
    });

    const result = await openai().chat?.(chatCall());

    expect(fake.chatRequests()[0]?.headers.authorization).toBe('Bearer test-key');
    expect(result).toMatchObject({
      finishReason: 'tool_calls',
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Oslo' } }],
    });
  });
});

// A server of the test's own, for what the fake cannot show: which connection a request came
// on, a body that stops halfway, an error page that is not JSON.
describe("both providers against a server of the test's own", () => {
  let server: Server;
  let baseUrl: string;
  let handle: (res: ServerResponse) => void;
  let connectionsOpened = 0;
  let lastAuthorization: string | undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      lastAuthorization = req.headers.authorization;
      req.resume();
      req.on('end', () => handle(res));
    });
    server.on('connection', () => {
      connectionsOpened++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('not listening on TCP');
    baseUrl = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  // An answer of each provider's API, whole or as the first piece of a stream that never ends.
  const ANSWERS = {
    openai: {
      whole: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 0,
        model: 'fake-model',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'Hello' },
            finish_reason: 'stop',
          },
        ],
      },
      streamType: 'text/event-stream',
      firstPiece: `data: ${JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'fake-model',
        choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }],
      })}\n\n`,
    },
    ollama: {
      whole: { model: 'fake-model', message: { role: 'assistant', content: 'Hello' }, done: true },
      streamType: 'application/x-ndjson',
      firstPiece: `${JSON.stringify({ message: { content: 'Hello' }, done: false })}\n`,
    },
    anthropic: {
      streamType: 'text/event-stream',
      firstPiece: [
        {
          type: 'message_start',
          message: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [],
            model: 'fake-model',
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 0 },
          },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } },
      ]
        .map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
        .join(''),
    },
  } as const;

  describe.each([
    ['openai', () => openai(`${baseUrl}/v1`)],
    ['ollama', () => ollama(baseUrl)],
  ] as const)('%s', (name, provider) => {
    const answer = ANSWERS[name];

    it('keeps its connection alive from one call to the next', async () => {
      handle = (res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(answer.whole));
      const client = provider();
      let opened = 0;

      for (let index = 0; index < 3; index++) {
        expect(await client.chat?.(chatCall())).toMatchObject({ content: 'Hello' });
        // A connection goes back to the pool a moment after its answer has been read; a call at
        // that very instant would open a second one.
        await sleep(20);
        if (index === 0) opened = connectionsOpened;
      }

      expect(connectionsOpened).toBe(opened);
    });

    it('gives the text of an error page that is not JSON as the message', async () => {
      handle = (res) => res.writeHead(502, { 'content-type': 'text/plain' }).end('Bad gateway\n');

      const failure = await failureOf(provider(), chatCall());

      expect(failure).toMatchObject({ kind: 'server', status: 502, message: 'Bad gateway' });
    });

    it('reads the message of a compatible server that puts it at the top level', async () => {
      handle = (res) =>
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(
            JSON.stringify({ object: 'error', message: 'maximum context length is 4096 tokens' }),
          );

      const failure = await failureOf(provider(), chatCall());

      expect(failure).toMatchObject({
        kind: 'context_length',
        status: 400,
        message: 'maximum context length is 4096 tokens',
      });
    });

    it('stops a stream when the caller cancels it halfway', async () => {
      handle = (res) => {
        res.writeHead(200, { 'content-type': answer.streamType });
        res.write(answer.firstPiece);
      };
      const controller = new AbortController();
      const call = chatCall({ signal: controller.signal, onDelta: () => controller.abort() });

      const failure = await failureOf(provider(), call);

      expect(failure.kind).toBe('cancelled');
    });
  });

  // Anthropic's SDK, like the others, stops its own timeout once the headers arrive.
  describe.each([
    ['openai', () => openai(`${baseUrl}/v1`)],
    ['ollama', () => ollama(baseUrl)],
    ['anthropic', () => createAnthropicProvider({ apiKey: 'test-key', baseURL: baseUrl })],
  ] as const)('%s streaming', (name, provider) => {
    const answer = ANSWERS[name];

    it('times out a stream that stops halfway, after the pieces already sent', async () => {
      handle = (res) => {
        res.writeHead(200, { 'content-type': answer.streamType });
        res.write(answer.firstPiece);
      };
      const pieces: string[] = [];
      const call = chatCall({ timeoutMs: 300, onDelta: (text) => pieces.push(text) });

      const failure = await failureOf(provider(), call);

      expect(failure.kind).toBe('timeout');
      expect(pieces).toEqual(['Hello']);
    });
  });

  describe('ollama behind a proxy that asks for a password in its URL', () => {
    const withPassword = (url: string) => url.replace('http://', 'http://jarvis:s3cret%21@');

    it('sends the user and password as Basic auth', async () => {
      handle = (res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(ANSWERS.ollama.whole));

      const result = await ollama(withPassword(baseUrl)).chat?.(chatCall());

      expect(result).toMatchObject({ content: 'Hello' });
      expect(lastAuthorization).toBe(`Basic ${Buffer.from('jarvis:s3cret!').toString('base64')}`);
    });

    it('never names the password in a failure', async () => {
      const port = await freePort();

      const failure = await failureOf(ollama(withPassword(`http://127.0.0.1:${port}`)), chatCall());

      expect(failure.kind).toBe('network');
      expect(failure.message).not.toContain('s3cret');
    });
  });
});
