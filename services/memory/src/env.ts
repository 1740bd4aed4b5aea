import { baseEnvShape, databaseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';
import { DEFAULT_COMPACTION } from './services/compact-conversation';
import { DEFAULT_INDEXER } from './services/index-messages';

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8082),
  // Connections to Postgres held by this process.
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(10),
  // A conversation's unsummarised tail longer than this (estimated tokens) is summarised...
  SUMMARY_TRIGGER_TOKENS: z.coerce
    .number()
    .int()
    .min(500)
    .default(DEFAULT_COMPACTION.triggerTokens),
  // ...down to this many of its newest tokens, kept verbatim.
  SUMMARY_KEEP_TOKENS: z.coerce.number().int().min(100).default(DEFAULT_COMPACTION.keepTokens),
  // Longest wait for one answer of the utility model (a summary, a fact extraction, a week's
  // roll-up).
  UTILITY_MODEL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(DEFAULT_COMPACTION.modelTimeoutMs),
  // Longest a conversation's newest message waits to be indexed for the message after it, so
  // that it is embedded once with both neighbours as context (a search indexes it at once).
  MESSAGE_INDEX_HOLD_MS: z.coerce.number().int().min(0).default(DEFAULT_INDEXER.holdMs),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
