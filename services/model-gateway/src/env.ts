import { baseEnvShape, databaseEnvShape, parseEnv, redisEnvShape } from '@jarvis/service-kit';
import { z } from 'zod';
import { usageEnvShape } from './usage/usage-env';

const Switch = z.enum(['on', 'off']);
// "provider/model,provider/model": an ordered route, overriding the config file's.
const Route = z.string().transform((value) =>
  value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean),
);

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  ...redisEnvShape,
  ...usageEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8083),
  // Routes and prices (infra/models.json); unset: the file shipped with the service.
  MODEL_CONFIG_FILE: z.string().optional(),
  // Ordered provider/model lists per purpose, overriding the config file.
  MODEL_ROUTE_CHAT: Route.optional(),
  MODEL_ROUTE_UTILITY: Route.optional(),
  MODEL_ROUTE_EMBED: Route.optional(),
  // Anthropic key; its models in a route are skipped without it.
  ANTHROPIC_API_KEY: z.string().optional(),
  // Anthropic API base URL (a proxy or a compatible server).
  ANTHROPIC_BASE_URL: z.string().optional(),
  // OpenAI key; its models are skipped without it (or without OPENAI_BASE_URL).
  OPENAI_API_KEY: z.string().optional(),
  // Base URL of OpenAI or any OpenAI-compatible server (vLLM, LM Studio, a test double).
  OPENAI_BASE_URL: z.string().optional(),
  // Ollama server: local models, always tried when a route names them.
  OLLAMA_BASE_URL: z.string().default('http://127.0.0.1:11434'),
  // The local models compose downloads; routes name them as ${OLLAMA_CHAT_MODEL} and
  // ${OLLAMA_EMBED_MODEL}.
  OLLAMA_CHAT_MODEL: z.string().default('llama3.2:3b'),
  OLLAMA_EMBED_MODEL: z.string().default('nomic-embed-text'),
  // Context window Ollama runs its chat models with (its own default is a few thousand tokens,
  // and it silently drops the start of a longer prompt: the system prompt first). Also the
  // largest prompt routing sends to an Ollama model. More costs memory: about 2 GB at 16k for a
  // 3B model.
  OLLAMA_NUM_CTX: z.coerce.number().int().min(2_048).max(1_048_576).default(16_384),
  // Longest a single model call may take (one attempt).
  MODEL_TIMEOUT_MS: z.coerce.number().int().min(100).default(120_000),
  // Longest a whole call may take, retries and fallbacks included, unless the caller says.
  MODEL_DEADLINE_MS: z.coerce.number().int().min(100).default(170_000),
  // Retries of one model on 429, 5xx and network errors before the next model is tried.
  MODEL_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  // First backoff; it doubles per retry, with full jitter.
  MODEL_RETRY_BASE_MS: z.coerce.number().int().min(0).default(250),
  // A provider asking to wait longer than this (Retry-After) is left for the next model.
  MODEL_RETRY_MAX_WAIT_MS: z.coerce.number().int().min(0).default(4_000),
  // Failures of one provider within the window that open its cooldown (circuit breaker).
  MODEL_COOLDOWN_FAILURES: z.coerce.number().int().min(1).default(3),
  MODEL_COOLDOWN_WINDOW_MS: z.coerce.number().int().min(100).default(60_000),
  // How long a provider is skipped once its cooldown is open.
  MODEL_COOLDOWN_MS: z.coerce.number().int().min(100).default(30_000),
  // Context window assumed for a model missing from the config file.
  MODEL_DEFAULT_CONTEXT_WINDOW: z.coerce.number().int().min(1_024).default(32_768),
  // Secrets and personal data become placeholders before any hosted provider sees them.
  MODEL_REDACTION: Switch.default('on'),
  // Prompt and reply text on GenAI spans; off by default, as it is the user's private data.
  MODEL_TELEMETRY_CONTENT: Switch.default('off'),
  // How long an embedding stays in the Redis cache.
  EMBED_CACHE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(30 * 24 * 3600),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
