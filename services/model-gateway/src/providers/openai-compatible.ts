import OpenAI from 'openai';
import type { ChatProvider } from './provider';

export type OpenAiCompatibleOptions = {
  name: string;
  baseURL: string | undefined;
  apiKey: string;
  model: string;
  timeoutMs: number;
};

// OpenAI itself, Ollama's /v1 endpoint, and any other server that speaks the same API.
export function createOpenAiCompatibleProvider(options: OpenAiCompatibleOptions): ChatProvider {
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL,
    timeout: options.timeoutMs,
    // One attempt, so MODEL_TIMEOUT_MS bounds the whole call; retries with backoff and
    // fallbacks belong to the routing layer (model-gateway issue).
    maxRetries: 0,
  });
  return {
    name: options.name,
    model: options.model,
    async chat(call) {
      const completion = await client.chat.completions.create({
        model: options.model,
        messages: call.messages,
        ...(call.maxTokens === undefined ? {} : { max_tokens: call.maxTokens }),
        ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
      });
      const choice = completion.choices[0];
      return {
        content: choice?.message.content ?? '',
        model: completion.model,
        finishReason: choice?.finish_reason ?? 'unknown',
        usage: {
          inputTokens: completion.usage?.prompt_tokens ?? 0,
          outputTokens: completion.usage?.completion_tokens ?? 0,
        },
      };
    },
  };
}
