import type { ChatMessage, FinishReason, ToolCall, ToolChoice, Usage } from '@jarvis/contracts';
import { ProviderError } from './provider-error';

type ToolSpec = { name: string; description: string; parameters: Record<string, unknown> };

// One attempt at one model, in the gateway's neutral shape; each provider translates it.
export type ChatCall = {
  model: string;
  system: string | undefined;
  // Never role 'system': system text is gathered into `system`.
  messages: Exclude<ChatMessage, { role: 'system' }>[];
  tools: ToolSpec[];
  toolChoice: ToolChoice | undefined;
  temperature: number | undefined;
  maxTokens: number | undefined;
  // The JSON Schema the reply must match (structured output).
  jsonSchema: { name: string; schema: Record<string, unknown> } | undefined;
  timeoutMs: number;
  signal: AbortSignal;
  // Set when the caller streams: text as it arrives.
  onDelta: ((text: string) => void) | undefined;
};

export type ChatResult = {
  content: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  // The model that answered, as the provider names it.
  model: string;
  usage: Usage;
};

type CallLimits = { timeoutMs: number; signal: AbortSignal };
type EmbedCall = CallLimits & { model: string; texts: string[] };
type EmbedResult = { vectors: number[][]; inputTokens: number };

export type Provider = {
  name: string;
  // Hosted providers see only redacted text.
  hosted: boolean;
  chat?(call: ChatCall): Promise<ChatResult>;
  embed?(call: EmbedCall): Promise<EmbedResult>;
};

// Tool-call arguments arrive as JSON text; a model that writes broken JSON gets it back as
// text, so the caller's schema check can tell the model what went wrong.
export function parseToolArguments(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // Falls through to the raw text.
  }
  return { _unparsed: text };
}

// Runs one provider call with a signal that ends it when the caller cancels or when its time is
// up. The time covers the whole answer, a streamed one to its last piece: the SDKs' own timeout
// stops at the answer's headers, so a stream that stalls halfway would hold the turn forever.
export async function withTimeout<T>(
  call: CallLimits,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = AbortSignal.timeout(call.timeoutMs);
  const signal = AbortSignal.any([call.signal, timeout]);
  try {
    const result = await run(signal);
    // The `openai` SDK ends a stream quietly when its signal aborts, as if the answer were whole.
    signal.throwIfAborted();
    return result;
  } catch (error) {
    if (timeout.aborted && !call.signal.aborted) {
      throw new ProviderError('timeout', 'no answer in time');
    }
    throw error;
  }
}
