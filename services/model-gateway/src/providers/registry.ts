import type { Env } from '../env';
import { createAnthropicProvider } from './anthropic';
import { createOllamaProvider } from './ollama';
import { createOpenAiCompatibleProvider } from './openai-compatible';
import type { Provider } from './provider';

// The providers this install can call: a cloud provider only with its credentials; Ollama
// always (it may still be unreachable, which the router handles).
export function createProviders(env: Env): Map<string, Provider> {
  const providers = new Map<string, Provider>();
  if (env.ANTHROPIC_API_KEY) {
    providers.set(
      'anthropic',
      createAnthropicProvider({ apiKey: env.ANTHROPIC_API_KEY, baseURL: env.ANTHROPIC_BASE_URL }),
    );
  }
  if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
    providers.set(
      'openai',
      createOpenAiCompatibleProvider({
        name: 'openai',
        baseURL: env.OPENAI_BASE_URL,
        // A compatible server without auth still needs a non-empty key for the SDK.
        apiKey: env.OPENAI_API_KEY ?? 'unused',
        // Redacted even when the base URL is a local server: the gateway cannot tell where
        // that server sends what it gets. MODEL_REDACTION=off turns redaction off.
        hosted: true,
      }),
    );
  }
  providers.set(
    'ollama',
    createOllamaProvider({ baseUrl: env.OLLAMA_BASE_URL, numCtx: env.OLLAMA_NUM_CTX }),
  );
  return providers;
}
