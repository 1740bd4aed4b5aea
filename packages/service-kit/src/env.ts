import { OTLP_PROTOCOLS } from '@jarvis/telemetry';
import { z } from 'zod';

// Settings every service reads. Each service spreads these into its own schema in src/env.ts.
export const baseEnvShape = {
  // NATS server (JetStream enabled).
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  // Prefix of every subject and stream; lets several installs or test runs share one NATS.
  NATS_NAMESPACE: z
    .string()
    .regex(/^[a-zA-Z0-9_-]+$/)
    .default('jarvis'),
  // pino level: fatal, error, warn, info, debug, trace.
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  // OTLP/HTTP collector base URL; traces are exported only when set.
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  // How traces are encoded for it: http/protobuf (the OTel default) or http/json.
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(OTLP_PROTOCOLS).default('http/protobuf'),
  // How long a dependency (NATS, Postgres, Redis) may stay lost before the process exits so
  // that its restart policy brings it back.
  DEPENDENCY_LOSS_EXIT_MS: z.coerce.number().int().min(1_000).default(30_000),
};

export const databaseEnvShape = {
  // Postgres with pgvector. Unset: the embedded Postgres that `make dev` and the tests start.
  DATABASE_URL: z.string().default('postgres://postgres:postgres@127.0.0.1:54320/postgres'),
  // Longest one statement may run before Postgres cancels it (0: no limit). Under the gateway's
  // SERVICE_TIMEOUT_MS, so a request answered 504 does not leave its query running. The
  // embedded Postgres ignores it.
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).default(4_500),
  // The same for batch work: migrations, imports, export pages, summaries (0: no limit).
  DATABASE_BATCH_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).default(600_000),
};

// What a service's env.ts parses from databaseEnvShape.
export type DatabaseEnv = {
  DATABASE_URL: string;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_BATCH_STATEMENT_TIMEOUT_MS: number;
};

// What createPool takes from databaseEnvShape's settings.
export function databasePoolSettings(env: DatabaseEnv) {
  return {
    url: env.DATABASE_URL,
    statementTimeoutMs: env.DATABASE_STATEMENT_TIMEOUT_MS,
    batchStatementTimeoutMs: env.DATABASE_BATCH_STATEMENT_TIMEOUT_MS,
  };
}

export const redisEnvShape = {
  // Redis for short-lived state: locks, rate limits, budgets.
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
};

// Parses the environment once at boot; a bad setting stops the process with a message that names
// it, instead of failing later somewhere far from the cause.
export function parseEnv<S extends z.ZodType>(
  schema: S,
  source: Record<string, string | undefined>,
): z.output<S> {
  // Compose passes a variable left unset in .env as an empty string: that means "not set", so
  // the setting's default applies.
  const set = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== ''));
  const result = z.safeParse(schema, set);
  if (result.success) return result.data;
  const problems = result.error.issues.map(
    (issue) => `  ${issue.path.join('.')}: ${issue.message}`,
  );
  process.stderr.write(`invalid configuration:\n${problems.join('\n')}\n`);
  process.exit(78);
}
