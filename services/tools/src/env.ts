import { OutboundAllowedHosts } from '@jarvis/net-guard';
import { baseEnvShape, parseEnv } from '@jarvis/service-kit';
import { z } from 'zod';

const Env = z.object({
  ...baseEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8084),
  // Private destinations web_fetch may reach besides the public internet (comma-separated host
  // names, host:port, IPs, CIDRs): the model can read anything they serve. Metadata never.
  OUTBOUND_ALLOWED_HOSTS: OutboundAllowedHosts,
  // Longest one web_fetch takes, redirects included.
  WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  // Bytes of a page web_fetch reads (after decompression); the rest is cut off.
  WEB_FETCH_MAX_BYTES: z.coerce.number().int().min(1_024).default(2_000_000),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
