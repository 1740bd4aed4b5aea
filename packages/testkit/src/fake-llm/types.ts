import type { ServerResponse } from 'node:http';

export type FakeToolCall = { id?: string; name: string; arguments: Record<string, unknown> };

export type FakeUsage = { inputTokens: number; outputTokens: number };

export type FakeReply = {
  /** Assistant text. When both `content` and `toolCalls` are absent the default reply text is used. */
  content?: string;
  /** Tool calls (OpenAI/Ollama) or tool_use blocks (Anthropic). */
  toolCalls?: FakeToolCall[];
  /** When set to >= 400, answer this HTTP error with a provider-shaped body instead. */
  status?: number;
  errorMessage?: string;
  retryAfterSeconds?: number;
  /** Wait this long before answering (for timeout tests). */
  delayMs?: number;
  /** Default: ceil(chars / 4) of all input message text, and of the output. */
  usage?: FakeUsage;
};

export type FakeLlmFormat = 'openai' | 'anthropic' | 'ollama';

export type FakeLlmRequest = {
  format: FakeLlmFormat;
  kind: 'chat' | 'embeddings';
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body as received (the raw text when it was not valid JSON). */
  body: unknown;
  receivedAt: number;
};

export type ChatReplyFn = (request: FakeLlmRequest) => FakeReply | Promise<FakeReply>;

export type FakeLlmHold = { reached: Promise<FakeLlmRequest>; release(): void };

export type FakeLlm = {
  /** http://127.0.0.1:<port>; also the Anthropic SDK baseURL (it appends /v1/messages). */
  url: string;
  /** url + '/v1', the OpenAI SDK baseURL. */
  openaiBaseUrl: string;
  /** Every chat and embeddings request received, in order. */
  requests: FakeLlmRequest[];
  chatRequests(): FakeLlmRequest[];
  /** Queue replies consumed in order by chat requests of any format. */
  script(...replies: FakeReply[]): void;
  /** Reply function used when the script queue is empty. */
  onChat(fn: ChatReplyFn): void;
  /** The next chat request is recorded, `reached` resolves, and its answer waits for release(). */
  hold(): FakeLlmHold;
  /** Clear queue, requests, holds and seen models; restore the default reply function. */
  reset(): void;
  close(): Promise<void>;
};

export type FakeLlmOptions = {
  port?: number;
  host?: string;
  /** Models listed by GET /api/tags and GET /v1/models, in addition to the models seen. */
  models?: string[];
  /** Embedding size when the request does not ask for `dimensions`; default 16. */
  embeddingDimensions?: number;
};

/** What a chat request asked for, in a provider-neutral shape. */
export type ChatInput = {
  model: string;
  stream: boolean;
  includeUsage: boolean;
  lastUserText: string;
  inputText: string;
};

/** The reply to render, with defaults filled in. */
export type ChatAnswer = {
  seq: number;
  createdAt: number;
  model: string;
  content: string;
  toolCalls: FakeToolCall[];
  usage: FakeUsage;
};

export type FakeError = { status: number; message: string; retryAfterSeconds?: number };

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export type JsonReply = { status: number; body: unknown };

export type ChatProtocol = {
  format: FakeLlmFormat;
  parse(body: unknown): Parsed<ChatInput>;
  respond(res: ServerResponse, input: ChatInput, answer: ChatAnswer): void;
};
