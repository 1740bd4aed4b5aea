import { baseEnvShape, databaseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  // Port of the public API (behind Traefik), /healthz, /readyz and /metrics.
  GATEWAY_PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  // The admin API key. Unset: one is generated on first start and printed once.
  JARVIS_ADMIN_KEY: z
    .string()
    .min(24, 'JARVIS_ADMIN_KEY must be at least 24 characters')
    .optional(),
  // Largest accepted request body, in bytes.
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(256 * 1_024),
  // Largest accepted history import body, in bytes (up to 5,000 messages per call).
  IMPORT_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(32 * 1_024 * 1_024),
  // Longest a chat request waits for its reply before answering 504 (the turn goes on).
  TURN_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(180_000),
  // Longest wait for a service to accept a request before answering 503/504.
  SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
