import { baseEnvShape, databaseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8085),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
