import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { anthropicMessages, describeAnthropicError } from './fake-llm/anthropic';
import {
  answerOllamaEmbed,
  answerOllamaLegacyEmbeddings,
  answerOpenAiEmbeddings,
  DEFAULT_EMBEDDING_DIMENSIONS,
  readEmbeddingModel,
} from './fake-llm/embeddings';
import {
  errorHeaders,
  flattenHeaders,
  isGone,
  parseJsonBody,
  readBody,
  sendJson,
  sleep,
  waitUntil,
} from './fake-llm/http-io';
import { estimateTokens } from './fake-llm/messages';
import { describeOllamaError, listOllamaModels, ollamaChat } from './fake-llm/ollama';
import { describeOpenAiError, listOpenAiModels, openAiChat } from './fake-llm/openai';
import type {
  ChatAnswer,
  ChatInput,
  ChatProtocol,
  ChatReplyFn,
  FakeError,
  FakeLlm,
  FakeLlmFormat,
  FakeLlmHold,
  FakeLlmOptions,
  FakeLlmRequest,
  FakeReply,
  JsonReply,
} from './fake-llm/types';

export { computeFakeEmbedding, encodeFloat32Base64 } from './fake-llm/embeddings';
export { isTurnRequest, type SentMessage, sentMessages } from './fake-llm/sent-messages';
export type {
  ChatReplyFn,
  FakeLlm,
  FakeLlmFormat,
  FakeLlmHold,
  FakeLlmOptions,
  FakeLlmRequest,
  FakeReply,
  FakeToolCall,
  FakeUsage,
} from './fake-llm/types';

type Route =
  | { kind: 'chat'; protocol: ChatProtocol }
  | {
      kind: 'embeddings';
      format: FakeLlmFormat;
      answer: (body: unknown, defaultDimensions: number) => JsonReply;
    }
  | { kind: 'models'; list: (models: string[], createdAt: number) => unknown };

const ROUTES: Record<string, Route> = {
  'POST /v1/chat/completions': { kind: 'chat', protocol: openAiChat },
  'POST /v1/messages': { kind: 'chat', protocol: anthropicMessages },
  'POST /api/chat': { kind: 'chat', protocol: ollamaChat },
  'POST /v1/embeddings': { kind: 'embeddings', format: 'openai', answer: answerOpenAiEmbeddings },
  'POST /api/embed': { kind: 'embeddings', format: 'ollama', answer: answerOllamaEmbed },
  'POST /api/embeddings': {
    kind: 'embeddings',
    format: 'ollama',
    answer: answerOllamaLegacyEmbeddings,
  },
  'GET /v1/models': { kind: 'models', list: listOpenAiModels },
  'GET /api/tags': { kind: 'models', list: listOllamaModels },
};

const ERROR_DESCRIBERS: Record<FakeLlmFormat, (error: FakeError) => unknown> = {
  openai: describeOpenAiError,
  anthropic: describeAnthropicError,
  ollama: describeOllamaError,
};

type PendingHold = {
  reach(request: FakeLlmRequest): void;
  released: Promise<void>;
  release(): void;
};

type ReplyOutcome = { ok: true; reply: FakeReply } | { ok: false; error: unknown };

const replyByDefault: ChatReplyFn = () => ({});

function createDeferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

function sendError(res: ServerResponse, format: FakeLlmFormat, error: FakeError): void {
  sendJson(res, error.status, ERROR_DESCRIBERS[format](error), errorHeaders(error));
}

// A settled outcome is awaited later (after a hold), so a rejection must not go unhandled meanwhile.
function settleReply(fn: ChatReplyFn, request: FakeLlmRequest): Promise<ReplyOutcome> {
  return new Promise<FakeReply>((resolve) => resolve(fn(request))).then(
    (reply) => ({ ok: true, reply }),
    (error: unknown) => ({ ok: false, error }),
  );
}

function buildAnswer(reply: FakeReply, input: ChatInput, seq: number): ChatAnswer {
  const useDefault = reply.content === undefined && reply.toolCalls === undefined;
  const content = useDefault ? `fake reply to: ${input.lastUserText}` : (reply.content ?? '');
  const toolCalls = reply.toolCalls ?? [];
  const outputText = [content, ...toolCalls.map((call) => JSON.stringify(call.arguments))].join('');
  return {
    seq,
    createdAt: Date.now(),
    model: input.model,
    content,
    toolCalls,
    usage: reply.usage ?? {
      inputTokens: estimateTokens(input.inputText),
      outputTokens: estimateTokens(outputText),
    },
  };
}

function formatUrlHost(address: string): string {
  if (address === '0.0.0.0') return '127.0.0.1';
  if (address === '::') return '[::1]';
  return address.includes(':') ? `[${address}]` : address;
}

export async function startFakeLlm(options: FakeLlmOptions = {}): Promise<FakeLlm> {
  const defaultDimensions = options.embeddingDimensions ?? DEFAULT_EMBEDDING_DIMENSIONS;
  const configuredModels = options.models ?? [];
  const requests: FakeLlmRequest[] = [];
  const queue: FakeReply[] = [];
  const seenModels = new Set<string>();
  const inflight = new Set<AbortController>();
  let holds: PendingHold[] = [];
  const takenHolds = new Set<PendingHold>();
  let replyFn = replyByDefault;
  let seq = 0;

  function listModels(): string[] {
    return [...new Set([...configuredModels, ...seenModels])];
  }

  function recordModel(model: string | undefined): void {
    if (model !== undefined && model !== '') seenModels.add(model);
  }

  async function answerChat(
    protocol: ChatProtocol,
    request: FakeLlmRequest,
    res: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const input = protocol.parse(request.body);
    if (!input.ok) {
      sendError(res, protocol.format, { status: 400, message: input.message });
      return;
    }
    recordModel(input.value.model);
    // Hold and reply are taken on arrival so concurrent requests get them in arrival order.
    const hold = holds.shift();
    const scripted = queue.shift();
    const outcome: Promise<ReplyOutcome> = scripted
      ? Promise.resolve({ ok: true, reply: scripted })
      : settleReply(replyFn, request);
    if (hold) {
      takenHolds.add(hold);
      hold.reach(request);
      await waitUntil(hold.released, signal);
      takenHolds.delete(hold);
    }
    const settled = await outcome;
    if (!settled.ok) {
      const message =
        settled.error instanceof Error ? settled.error.message : String(settled.error);
      sendError(res, protocol.format, { status: 500, message: `Fake reply failed: ${message}` });
      return;
    }
    const reply = settled.reply;
    if (reply.delayMs !== undefined && reply.delayMs > 0) await sleep(reply.delayMs, signal);
    if (signal.aborted) return;
    if (reply.status !== undefined && reply.status >= 400) {
      sendError(res, protocol.format, {
        status: reply.status,
        message: reply.errorMessage ?? `Fake error ${reply.status}`,
        retryAfterSeconds: reply.retryAfterSeconds,
      });
      return;
    }
    seq += 1;
    protocol.respond(res, input.value, buildAnswer(reply, input.value, seq));
  }

  async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    inflight.add(controller);
    res.on('close', () => {
      inflight.delete(controller);
      controller.abort();
    });
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://fake-llm').pathname;
    const text = await readBody(req);
    const route = ROUTES[`${method} ${path}`];
    if (route === undefined) {
      sendJson(res, 404, {
        error: {
          message: `No fake route for ${method} ${path}`,
          type: 'not_found_error',
          code: null,
        },
      });
      return;
    }
    if (route.kind === 'models') {
      sendJson(res, 200, route.list(listModels(), Date.now()));
      return;
    }
    const format = route.kind === 'chat' ? route.protocol.format : route.format;
    const json = parseJsonBody(text);
    const request: FakeLlmRequest = {
      format,
      kind: route.kind,
      path,
      headers: flattenHeaders(req.headers),
      body: json.ok ? json.body : text,
      receivedAt: Date.now(),
    };
    requests.push(request);
    if (!json.ok) {
      sendError(res, format, { status: 400, message: 'Request body is not valid JSON.' });
      return;
    }
    if (route.kind === 'chat') {
      await answerChat(route.protocol, request, res, controller.signal);
      return;
    }
    recordModel(readEmbeddingModel(json.body));
    const reply = route.answer(json.body, defaultDimensions);
    sendJson(res, reply.status, reply.body);
  }

  const server = createServer((req, res) => {
    handleRequest(req, res).catch((error: unknown) => {
      if (isGone(res)) return;
      sendJson(res, 500, { error: { message: String(error), type: 'server_error', code: null } });
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    throw new Error('fake LLM server is not listening on a TCP port');
  }
  const url = `http://${formatUrlHost(address.address)}:${address.port}`;

  let closing: Promise<void> | undefined;

  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    requests,
    chatRequests: () => requests.filter((request) => request.kind === 'chat'),
    script: (...replies) => {
      queue.push(...replies);
    },
    onChat: (fn) => {
      replyFn = fn;
    },
    hold: (): FakeLlmHold => {
      const reached = createDeferred<FakeLlmRequest>();
      const released = createDeferred<void>();
      holds.push({ reach: reached.resolve, released: released.promise, release: released.resolve });
      return { reached: reached.promise, release: () => released.resolve() };
    },
    reset: () => {
      // Requests already waiting on a hold are let go so their clients do not hang.
      for (const hold of takenHolds) hold.release();
      takenHolds.clear();
      holds = [];
      queue.length = 0;
      requests.length = 0;
      seenModels.clear();
      replyFn = replyByDefault;
      seq = 0;
    },
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        for (const controller of inflight) controller.abort();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
