import { randomUUID } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import type {
  ChatMessage,
  ModelChatChunk,
  ModelChatRequest,
  ModelChatResponse,
  ToolCall,
} from '@jarvis/contracts';
import { GEN_AI, JARVIS, type Logger, SpanKind, withSpan } from '@jarvis/telemetry';
import type { z } from 'zod';
import { costOf, type ModelTarget, type Purpose } from '../config/model-config';
import type { ChatCall, ChatResult, Provider } from '../providers/provider';
import { classifyError, ProviderError } from '../providers/provider-error';
import { createRedactor, type Redactor } from '../redaction/redactor';
import type { CallMetrics } from '../telemetry/call-metrics';
import type { GenAiMetrics } from '../telemetry/gen-ai';
import type { UsageMeter } from '../usage/usage-meter';
import type { Cooldown } from './cooldown';
import { createDeltaRestorer } from './delta-restorer';
import { checkJson, compileSchema } from './json-output';
import { type RetrySettings, withRetries } from './retry';

type RouterSettings = RetrySettings & {
  deadlineMs: number;
  redaction: boolean;
  recordContent: boolean;
};

export type RouterDeps = {
  providers: Map<string, Provider>;
  routes: Record<Purpose, ModelTarget[]>;
  cooldown: Cooldown;
  meter: UsageMeter;
  metrics: GenAiMetrics;
  callMetrics: CallMetrics;
  settings: RouterSettings;
  logger: Logger;
};

type Request = z.output<typeof ModelChatRequest>;

// What every attempt of one request shares.
type Job = {
  requestId: string;
  request: Request;
  system: string | undefined;
  messages: ChatCall['messages'];
  signal: AbortSignal;
  deadline: number;
  onChunk: ((chunk: ModelChatChunk) => void) | undefined;
  // Set once a chunk went out: another model can no longer take over without the caller
  // seeing two answers.
  streamed: boolean;
  redactor: Redactor | undefined;
  // Time spent waiting on providers so far: their calls and the pauses between retries.
  waited: { ms: number };
};

// Tokens of a prompt, estimated at four characters each, so the context-window check costs
// nothing; the model's own count comes back in the usage.
function estimateTokens(job: Job): number {
  const text = [job.system ?? '', ...job.messages.map((message) => JSON.stringify(message))];
  const tools = JSON.stringify(job.request.tools ?? []);
  return Math.ceil((text.join('').length + tools.length) / 4);
}

type ChatIo = { signal: AbortSignal; onChunk?: (chunk: ModelChatChunk) => void };

// One chat request: the purpose's models in order, each retried with backoff on transient
// failures, skipped while its provider cools down or when the prompt cannot fit it, until one
// answers. Everything that went wrong on the way is in the reply's `attempts`.
export async function routeChat(
  deps: RouterDeps,
  request: Request,
  io: ChatIo,
): Promise<ModelChatResponse> {
  const started = performance.now();
  const waited = { ms: 0 };
  try {
    return await answerRequest(deps, request, io, waited);
  } finally {
    deps.callMetrics.recordOverhead((performance.now() - started - waited.ms) / 1_000);
  }
}

async function answerRequest(
  deps: RouterDeps,
  request: Request,
  io: ChatIo,
  waited: Job['waited'],
): Promise<ModelChatResponse> {
  const requestId = request.requestId ?? randomUUID();
  const route = deps.routes[request.purpose];
  if (route.length === 0) {
    throw new BusError(
      'unavailable',
      `no ${request.purpose} model is configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or run Ollama`,
    );
  }
  const job: Job = {
    requestId,
    request,
    ...splitSystem(request),
    signal: io.signal,
    deadline: Date.now() + (request.deadlineMs ?? deps.settings.deadlineMs),
    onChunk: io.onChunk,
    streamed: false,
    redactor: undefined,
    waited,
  };
  const needed = estimateTokens(job) + (request.maxTokens ?? 0);
  // Both read Redis: side by side, and in one write when the cooldowns are due a refresh.
  const [cooling] = await Promise.all([
    deps.callMetrics.timeStage('cooldown_check', () =>
      deps.cooldown.open([...new Set(route.map((target) => target.provider))]),
    ),
    deps.callMetrics.timeStage('budget_admission', () =>
      deps.meter.admit(request.userId, request.purpose),
    ),
  ]);
  const attempts: ModelChatResponse['attempts'] = [];
  let tooLong = 0;
  for (const target of route) {
    const until = cooling.get(target.provider);
    if (until) {
      attempts.push({ ...nameOf(target), error: `cooling down until ${until.toISOString()}` });
      continue;
    }
    if (needed > target.info.contextWindow) {
      tooLong += 1;
      attempts.push({
        ...nameOf(target),
        error: `a prompt of about ${needed} tokens does not fit its ${target.info.contextWindow}`,
      });
      continue;
    }
    const provider = deps.providers.get(target.provider);
    if (!provider?.chat) continue;
    try {
      const result = await withRetries(
        deps.settings,
        {
          deadline: job.deadline,
          signal: job.signal,
          canRetry: () => !job.streamed,
          onPaused: (ms) => {
            waited.ms += ms;
          },
        },
        (timeoutMs) => answerWith(deps, job, provider, target, timeoutMs),
      );
      const costUsd = costOf(target.info, result.usage.inputTokens, result.usage.outputTokens);
      // Not awaited: the answer need not wait for the accounting (see UsageMeter.record).
      void deps.callMetrics.timeStage('usage_recording', () =>
        deps.meter.record({
          // Per call, not per request: a caller may reuse its requestId for a retry.
          id: randomUUID(),
          ...(request.userId ? { userId: request.userId } : {}),
          provider: target.provider,
          model: target.model,
          purpose: request.purpose,
          inputTokens: result.usage.inputTokens,
          outputTokens: result.usage.outputTokens,
          costUsd,
          at: new Date().toISOString(),
        }),
      );
      deps.cooldown.recordSuccess(target.provider);
      attempts.push(nameOf(target));
      return { requestId, ...result, provider: target.provider, costUsd, attempts };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      if (error.kind === 'cancelled')
        throw new BusError('cancelled', 'the model call was cancelled');
      attempts.push({ ...nameOf(target), error: describe(error) });
      if (error.kind === 'context_length') tooLong += 1;
      if (error.kind === 'auth') await deps.cooldown.trip(target.provider);
      else if (error.countsAgainstProvider) await deps.cooldown.recordFailure(target.provider);
      deps.logger.warn(
        { requestId, provider: target.provider, model: target.model, kind: error.kind },
        'model call failed',
      );
      if (job.streamed) {
        throw new BusError('unavailable', `${target.ref} failed mid-answer: ${describe(error)}`);
      }
      if (Date.now() >= job.deadline) break;
    }
  }
  if (tooLong > 0 && tooLong === attempts.length) {
    const largest = Math.max(...route.map((target) => target.info.contextWindow));
    throw new BusError(
      'payload_too_large',
      `the prompt (about ${needed} tokens) does not fit any ${request.purpose} model; the largest takes ${largest}`,
    );
  }
  const summary = attempts.map(
    (attempt) => `${attempt.provider}/${attempt.model}: ${attempt.error}`,
  );
  throw new BusError(
    'unavailable',
    `no ${request.purpose} model could answer (${summary.join('; ')})`,
  );
}

function nameOf(target: ModelTarget) {
  return { provider: target.provider, model: target.model };
}

function describe(error: ProviderError): string {
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  return `${error.kind.replace('_', ' ')}${status}: ${error.message}`.slice(0, 300);
}

function splitSystem(request: Request): Pick<Job, 'system' | 'messages'> {
  const system = [
    request.system ?? '',
    ...request.messages.flatMap((message) => (message.role === 'system' ? [message.content] : [])),
  ].filter(Boolean);
  const messages = request.messages.filter(
    (message): message is Exclude<ChatMessage, { role: 'system' }> => message.role !== 'system',
  );
  return { system: system.length > 0 ? system.join('\n\n') : undefined, messages };
}

// One call, plus one corrective call when structured output did not match its schema.
async function answerWith(
  deps: RouterDeps,
  job: Job,
  provider: Provider,
  target: ModelTarget,
  timeoutMs: number,
): Promise<Omit<ModelChatResponse, 'requestId' | 'provider' | 'costUsd' | 'attempts'>> {
  const format = job.request.responseFormat;
  const validate = format ? compileSchema(format.schema) : undefined;
  const first = await callOnce(deps, job, provider, target, job.messages, timeoutMs);
  if (!validate) return { ...first, parsed: undefined };
  const checked = checkJson(first.content, validate);
  if (checked.ok) return { ...first, parsed: checked.value };
  const correction: ChatCall['messages'] = [
    ...job.messages,
    { role: 'assistant', content: first.content },
    {
      role: 'user',
      content: `That reply does not match the required JSON schema (${checked.problem}). Reply again with only the corrected JSON.`,
    },
  ];
  const second = await callOnce(deps, job, provider, target, correction, timeoutMs);
  const usage = {
    inputTokens: first.usage.inputTokens + second.usage.inputTokens,
    outputTokens: first.usage.outputTokens + second.usage.outputTokens,
  };
  const rechecked = checkJson(second.content, validate);
  if (rechecked.ok) return { ...second, usage, parsed: rechecked.value };
  deps.logger.warn(
    { requestId: job.requestId, provider: target.provider, model: target.model },
    'structured output did not match its schema twice',
  );
  throw new BusError(
    'unavailable',
    `${target.ref} did not answer with JSON matching the schema, even when asked again (${rechecked.problem})`,
  );
}

async function callOnce(
  deps: RouterDeps,
  job: Job,
  provider: Provider,
  target: ModelTarget,
  messages: ChatCall['messages'],
  timeoutMs: number,
): Promise<ChatResult> {
  const chat = provider.chat;
  if (!chat) throw new ProviderError('not_found', `${provider.name} has no chat models`);
  const redactor = redactorFor(deps, job, provider);
  const redact = (text: string) => (redactor ? redactor.redact(text) : text);
  // Structured output is for programs, which want the whole checked answer, not pieces.
  const stream = job.onChunk && !job.request.responseFormat ? openStream(job, redactor) : undefined;
  const call: ChatCall = {
    model: target.model,
    system: job.system === undefined ? undefined : redact(job.system),
    messages: messages.map((message) => redactMessage(message, redact)),
    tools: job.request.tools ?? [],
    toolChoice: job.request.toolChoice,
    temperature: job.request.temperature,
    maxTokens: job.request.maxTokens,
    jsonSchema: job.request.responseFormat,
    timeoutMs,
    signal: job.signal,
    onDelta: stream?.push,
  };
  // A local model (or an install with redaction off) is sent the real text; a span never is:
  // content for spans goes through a redactor of its own then. A model that was sent
  // placeholders answers with them, which a second pass leaves as they are.
  const spanRedactor = deps.settings.recordContent ? (redactor ?? createRedactor()) : undefined;
  const spanRedact = (text: string) => (spanRedactor ? spanRedactor.redact(text) : text);
  const started = performance.now();
  const labels = { operation: 'chat' as const, provider: target.provider, model: target.model };
  return withSpan(
    `chat ${target.model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [GEN_AI.operation]: 'chat',
        [GEN_AI.provider]: target.provider,
        [GEN_AI.requestModel]: target.model,
        ...(call.maxTokens === undefined ? {} : { [GEN_AI.maxTokens]: call.maxTokens }),
        ...(call.temperature === undefined ? {} : { [GEN_AI.temperature]: call.temperature }),
        // Only when the install opted in, and only ever redacted text.
        ...(spanRedactor
          ? {
              [GEN_AI.inputMessages]: JSON.stringify(
                redactor ? call.messages : call.messages.map((m) => redactMessage(m, spanRedact)),
              ),
            }
          : {}),
      },
    },
    async (span) => {
      let result: ChatResult;
      try {
        result = await waitOnProvider(job, () => chat(call));
      } catch (error) {
        const failure = classifyError(error, job.signal);
        span.setAttribute(GEN_AI.errorType, failure.kind);
        deps.metrics.record({ ...labels, error: failure.kind }, secondsSince(started));
        throw failure;
      }
      span.setAttributes({
        [GEN_AI.responseModel]: result.model,
        [GEN_AI.inputTokens]: result.usage.inputTokens,
        [GEN_AI.outputTokens]: result.usage.outputTokens,
        [GEN_AI.finishReasons]: [result.finishReason],
        [JARVIS.costUsd]: costOf(target.info, result.usage.inputTokens, result.usage.outputTokens),
        ...(spanRedactor
          ? { [GEN_AI.outputMessages]: JSON.stringify(spanRedact(result.content)) }
          : {}),
      });
      deps.metrics.record(labels, secondsSince(started), result.usage);
      const restored = redactor
        ? {
            ...result,
            content: redactor.restore(result.content, { secrets: true }),
            // Arguments go to tools, which may reach the network: secrets stay placeholders.
            toolCalls: result.toolCalls.map((toolCall) => restoreToolCall(toolCall, redactor)),
          }
        : result;
      stream?.finish(restored.toolCalls);
      return restored;
    },
  );
}

async function waitOnProvider<T>(job: Job, call: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await call();
  } finally {
    job.waited.ms += performance.now() - started;
  }
}

function secondsSince(started: number): number {
  return (performance.now() - started) / 1_000;
}

// One redactor per request, so a value gets the same placeholder in every message and attempt.
function redactorFor(deps: RouterDeps, job: Job, provider: Provider): Redactor | undefined {
  if (!deps.settings.redaction || !provider.hosted) return undefined;
  job.redactor ??= createRedactor();
  return job.redactor;
}

function redactMessage(
  message: ChatCall['messages'][number],
  redact: (text: string) => string,
): ChatCall['messages'][number] {
  if (message.role !== 'assistant' || !message.toolCalls) {
    return { ...message, content: redact(message.content) };
  }
  return {
    ...message,
    content: redact(message.content),
    toolCalls: message.toolCalls.map((toolCall) => ({
      ...toolCall,
      arguments: mapStrings(toolCall.arguments, redact) as Record<string, unknown>,
    })),
  };
}

function restoreToolCall(toolCall: ToolCall, redactor: Redactor): ToolCall {
  const restore = (text: string) => redactor.restore(text, { secrets: false });
  return {
    ...toolCall,
    arguments: mapStrings(toolCall.arguments, restore) as Record<string, unknown>,
  };
}

function mapStrings(value: unknown, fn: (text: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, fn));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, mapStrings(item, fn)]),
    );
  }
  return value;
}

// Text pieces to the caller's inbox as they come; tool calls once complete.
function openStream(job: Job, redactor: Redactor | undefined) {
  const restorer = redactor ? createDeltaRestorer(redactor) : undefined;
  const send = (text: string) => {
    if (text === '') return;
    job.streamed = true;
    job.onChunk?.({ type: 'delta', requestId: job.requestId, text });
  };
  return {
    // Called while the provider's call is timed as a wait on it: relaying a piece is the
    // gateway's own work, so its time is taken back out of the wait.
    push: (text: string) => {
      const pushedAt = performance.now();
      send(restorer ? restorer.push(text) : text);
      job.waited.ms -= performance.now() - pushedAt;
    },
    finish(toolCalls: ToolCall[]) {
      if (restorer) send(restorer.flush());
      for (const toolCall of toolCalls) {
        job.onChunk?.({ type: 'tool_call', requestId: job.requestId, toolCall });
      }
    },
  };
}
