import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

export type FailureKind =
  | 'rate_limited'
  | 'server'
  | 'network'
  | 'timeout'
  | 'context_length'
  | 'auth'
  | 'not_found'
  | 'bad_request'
  | 'bad_output'
  | 'cancelled';

// A failed attempt, classified so the router knows whether to retry, fall back or stop. The
// message is the provider's own, never the prompt.
export class ProviderError extends Error {
  readonly kind: FailureKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: FailureKind,
    message: string,
    details: { status?: number | undefined; retryAfterMs?: number | undefined } = {},
  ) {
    super(message);
    this.name = 'ProviderError';
    this.kind = kind;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
  }

  // Worth another try at the same model after a pause.
  get retryable(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'server' || this.kind === 'network';
  }

  // Says something about the provider's health, so it counts towards its cooldown.
  get countsAgainstProvider(): boolean {
    return this.retryable || this.kind === 'timeout' || this.kind === 'auth';
  }
}

// Enough for any provider's own message; an HTML error page is cut short.
const MAX_MESSAGE_CHARS = 300;

const CONTEXT_LENGTH =
  /context.length|context window|prompt is too long|too many tokens|maximum context/i;

function fromHttpStatus(
  status: number,
  message: string,
  retryAfter: string | null | undefined,
): ProviderError {
  const details = { status, retryAfterMs: parseRetryAfter(retryAfter) };
  if (status === 429) return new ProviderError('rate_limited', message, details);
  if (status === 401 || status === 403) return new ProviderError('auth', message, details);
  if (status === 404) return new ProviderError('not_found', message, details);
  if (status === 408) return new ProviderError('timeout', message, details);
  if (status >= 500) return new ProviderError('server', message, details);
  if (CONTEXT_LENGTH.test(message)) return new ProviderError('context_length', message, details);
  return new ProviderError('bad_request', message, details);
}

// An error answer read off the wire: the message is the provider's own (see errorMessageOf).
export function fromHttpResponse(
  status: number,
  body: string,
  retryAfter: string | undefined,
): ProviderError {
  return fromHttpStatus(status, errorMessageOf(body) ?? `HTTP ${status}`, retryAfter);
}

// The message in an error answer's body, as Ollama (`{error}`), OpenAI (`{error: {message}}`) and
// some compatible servers (`{message}`) put it, else the body's text.
export function errorMessageOf(body: string): string | undefined {
  try {
    const message = messageIn(JSON.parse(body));
    if (message !== undefined) return message;
  } catch {
    // Not JSON: a proxy's or a plain server's text.
  }
  return body.trim().slice(0, MAX_MESSAGE_CHARS) || undefined;
}

function messageIn(parsed: unknown): string | undefined {
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const error = 'error' in parsed ? parsed.error : parsed;
  if (typeof error === 'string') return error;
  if (error !== null && typeof error === 'object' && 'message' in error) {
    return String(error.message);
  }
  return undefined;
}

// SDK errors and failed answers into one classification.
export function classifyError(error: unknown, signal: AbortSignal): ProviderError {
  if (error instanceof ProviderError) return error;
  if (signal.aborted) return new ProviderError('cancelled', 'the call was cancelled');
  if (
    error instanceof OpenAI.APIConnectionTimeoutError ||
    error instanceof Anthropic.APIConnectionTimeoutError ||
    (error instanceof Error && error.name === 'TimeoutError')
  ) {
    return new ProviderError('timeout', 'no answer in time');
  }
  if (error instanceof OpenAI.APIError || error instanceof Anthropic.APIError) {
    if (error.status === undefined) return new ProviderError('network', 'no connection');
    // The `openai` SDK's `error` is the answer's, which openai-compatible.ts has put in OpenAI's
    // shape; its own message starts with the status.
    const message = (error instanceof OpenAI.APIError && messageIn(error.error)) || error.message;
    return fromHttpStatus(error.status, message, error.headers?.get('retry-after'));
  }
  return new ProviderError('network', error instanceof Error ? error.message : String(error));
}

// Seconds or an HTTP date, as RFC 9110 allows.
function parseRetryAfter(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1_000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
