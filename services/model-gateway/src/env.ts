import { baseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8083),
  // Anthropic key; when set, Anthropic answers chat.
  ANTHROPIC_API_KEY: z.string().optional(),
  // Anthropic API base URL (a proxy or a compatible server).
  ANTHROPIC_BASE_URL: z.string().optional(),
  // Anthropic model for chat.
  ANTHROPIC_CHAT_MODEL: z.string().default('claude-sonnet-4-5'),
  // OpenAI key; when set (and no Anthropic key), OpenAI answers chat.
  OPENAI_API_KEY: z.string().optional(),
  // Base URL of OpenAI or any OpenAI-compatible server (vLLM, LM Studio, a test double).
  OPENAI_BASE_URL: z.string().optional(),
  // Model name for the OpenAI-compatible provider.
  OPENAI_CHAT_MODEL: z.string().default('gpt-4o-mini'),
  // Ollama server: the local provider when no cloud key is set.
  OLLAMA_BASE_URL: z.string().default('http://127.0.0.1:11434'),
  // Ollama model for chat.
  OLLAMA_CHAT_MODEL: z.string().default('llama3.2:3b'),
  // Longest a single model call may take.
  MODEL_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(120_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
