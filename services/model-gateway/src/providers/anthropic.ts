import Anthropic from '@anthropic-ai/sdk';
import type { ChatProvider } from './provider';

export type AnthropicOptions = {
  apiKey: string;
  baseURL: string | undefined;
  model: string;
  timeoutMs: number;
};

// Anthropic requires max_tokens; this is its cap when the caller sets none.
const DEFAULT_MAX_TOKENS = 4_096;

export function createAnthropicProvider(options: AnthropicOptions): ChatProvider {
  const client = new Anthropic({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    timeout: options.timeoutMs,
    // One attempt, so MODEL_TIMEOUT_MS bounds the whole call; retries with backoff and
    // fallbacks belong to the routing layer (model-gateway issue).
    maxRetries: 0,
  });
  return {
    name: 'anthropic',
    model: options.model,
    async chat(call) {
      // Anthropic takes the system prompt beside the messages, not among them.
      const system = call.messages
        .filter((message) => message.role === 'system')
        .map((message) => message.content)
        .join('\n\n');
      const message = await client.messages.create({
        model: options.model,
        max_tokens: call.maxTokens ?? DEFAULT_MAX_TOKENS,
        ...(system ? { system } : {}),
        ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
        messages: call.messages.flatMap((entry) =>
          entry.role === 'system' ? [] : [{ role: entry.role, content: entry.content }],
        ),
      });
      const content = message.content
        .flatMap((block) => (block.type === 'text' ? [block.text] : []))
        .join('');
      return {
        content,
        model: message.model,
        finishReason: message.stop_reason ?? 'unknown',
        usage: {
          inputTokens: message.usage.input_tokens,
          outputTokens: message.usage.output_tokens,
        },
      };
    },
  };
}
