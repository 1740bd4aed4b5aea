import type { Env } from '../env';
import { createAnthropicProvider } from './anthropic';
import { createOpenAiCompatibleProvider } from './openai-compatible';
import type { ChatProvider } from './provider';

// A cloud key wins; with none, the local Ollama answers, so the stack works with no key at all.
// Ordered fallbacks per purpose come with the model-gateway issue.
export function selectChatProvider(env: Env): ChatProvider {
  if (env.ANTHROPIC_API_KEY) {
    return createAnthropicProvider({
      apiKey: env.ANTHROPIC_API_KEY,
      baseURL: env.ANTHROPIC_BASE_URL,
      model: env.ANTHROPIC_CHAT_MODEL,
      timeoutMs: env.MODEL_TIMEOUT_MS,
    });
  }
  if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
    return createOpenAiCompatibleProvider({
      name: 'openai',
      baseURL: env.OPENAI_BASE_URL,
      // A compatible server without auth still needs a non-empty key for the SDK.
      apiKey: env.OPENAI_API_KEY ?? 'unused',
      model: env.OPENAI_CHAT_MODEL,
      timeoutMs: env.MODEL_TIMEOUT_MS,
    });
  }
  return createOpenAiCompatibleProvider({
    name: 'ollama',
    baseURL: `${env.OLLAMA_BASE_URL.replace(/\/$/, '')}/v1`,
    apiKey: 'ollama',
    model: env.OLLAMA_CHAT_MODEL,
    timeoutMs: env.MODEL_TIMEOUT_MS,
  });
}
