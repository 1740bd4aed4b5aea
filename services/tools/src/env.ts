import { baseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8084),
  // Lets web_fetch reach private, loopback and link-local addresses (tests, home labs): the model
  // can then read anything this container can reach. Cloud metadata addresses stay refused.
  TOOLS_ALLOW_PRIVATE_NETWORK: z.stringbool().default(false),
  // Longest one web_fetch takes, redirects included.
  WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  // Bytes of a page web_fetch reads (after decompression); the rest is cut off.
  WEB_FETCH_MAX_BYTES: z.coerce.number().int().min(1_024).default(2_000_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
