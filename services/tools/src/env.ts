import { OutboundAllowedHosts } from '@jarvis/net-guard';
import { baseEnvShape, databaseEnvShape, parseEnv, redisEnvShape } from '@jarvis/service-kit';
import { z } from 'zod';

const Count = z.coerce.number().int().min(1);

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  ...redisEnvShape,
  // Port of /healthz, /readyz and /metrics.
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8084),
  // Private destinations web_fetch and notification channels (ntfy, webhook, per-user SMTP) may
  // reach besides the public internet (comma-separated host names, host:port, IPs, CIDRs): the
  // model can read anything they serve. Metadata never.
  OUTBOUND_ALLOWED_HOSTS: OutboundAllowedHosts,
  // Longest one web_fetch takes, redirects included.
  WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  // Bytes of a page web_fetch reads (after decompression); the rest is cut off.
  WEB_FETCH_MAX_BYTES: z.coerce.number().int().min(1_024).default(2_000_000),
  // The key that seals channel secrets at rest: base64 of 32 bytes. Unset: the key file's.
  JARVIS_SECRET_KEY: z.string().optional(),
  // Where the key is kept when JARVIS_SECRET_KEY is unset; created on first start (mode 0600).
  // The image sets /var/lib/jarvis/secrets/secret.key, on a volume of its own.
  JARVIS_SECRET_KEY_FILE: z.string().min(1).default('.data/secret.key'),
  // The web UI's address as users reach it (https://jarvis.example.com): notifications link to
  // it. Unset: they carry no link.
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  // The install's SMTP server, for email channels that bring none of their own. Unset: such
  // channels cannot be saved.
  SMTP_HOST: z.string().min(1).optional(),
  // Its port; the default follows SMTP_SECURITY (465 for tls, 25 for none, else 587).
  SMTP_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  // tls: TLS from the first byte; starttls: upgrade, required; none: plain (a local relay).
  SMTP_SECURITY: z.enum(['tls', 'starttls', 'none']).default('starttls'),
  // Login at the install's SMTP server; unset: none.
  SMTP_USER: z.string().min(1).optional(),
  SMTP_PASSWORD: z.string().min(1).optional(),
  // The sender of the install's mail.
  SMTP_FROM: z.email().optional(),
  // The install's Telegram bot (@BotFather's token). Unset: no Telegram channel.
  TELEGRAM_BOT_TOKEN: z.string().min(1).optional(),
  // The Bot API server: Telegram's, a local Bot API server, or a test stand-in.
  TELEGRAM_API_ROOT: z.url({ protocol: /^https?$/ }).default('https://api.telegram.org'),
  // The gateway's limits, which a Telegram message counts against like POST /v1/chat (the same
  // Redis windows): requests one user may make per minute, and chat turns on top (0: no limit).
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  CHAT_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  // Longest a Telegram message waits for its turn's reply before the chat is told so (the turn
  // goes on and its reply is kept), like POST /v1/chat.
  TURN_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(180_000),
  // Longest wait for the orchestrator to accept a Telegram message as a turn.
  SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  // Notes the agent's notify tool may send one user in an hour.
  NOTIFY_PER_HOUR: Count.default(10),
  // Longest one delivery attempt to a channel takes before it counts as a timeout (retried).
  NOTIFY_SEND_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  // Attempts at one delivery before it is recorded as failed.
  NOTIFY_MAX_ATTEMPTS: Count.default(10),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}
