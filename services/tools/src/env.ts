import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  // Private destinations web_fetch, the browser and notification channels (ntfy, webhook,
  // per-user SMTP, Web Push services) may reach besides the public internet (comma-separated
  // host names, host:port, IPs, CIDRs): the model can read anything they serve. Metadata never.
  OUTBOUND_ALLOWED_HOSTS: OutboundAllowedHosts,
  // Longest one web_fetch takes, redirects included.
  WEB_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(20_000),
  // Bytes of a page web_fetch reads (after decompression); the rest is cut off.
  WEB_FETCH_MAX_BYTES: z.coerce.number().int().min(1_024).default(2_000_000),
  // The Chromium the browser tools drive (the image installs Debian's).
  BROWSER_EXECUTABLE: z.string().min(1).default('/usr/bin/chromium'),
  // The user Chromium runs as when the service runs as root: its sandbox does not start as root.
  BROWSER_USER: z.string().min(1).default('nobody'),
  // Browser pages open at once over all runs; a call past it waits for one to close.
  BROWSER_MAX_PAGES: Count.default(4),
  // Longest one page takes to load (its load event), redirects included.
  BROWSER_PAGE_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(20_000),
  // Bytes one page load may receive, subresources included; past it the page is stopped.
  BROWSER_PAGE_MAX_BYTES: z.coerce.number().int().min(100_000).default(10_000_000),
  // A run's page unused this long is closed (a run paused for approval keeps it until then).
  BROWSER_IDLE_MS: z.coerce.number().int().min(1_000).default(300_000),
  // Where web_search asks: searxng (SEARXNG_URL), brave or tavily (their API key). Unset: the
  // first of them configured; none: the agent has no web_search tool.
  WEB_SEARCH_PROVIDER: z.enum(['searxng', 'brave', 'tavily']).optional(),
  // A SearXNG instance with JSON output on (compose's `search` profile: http://searxng:8080).
  SEARXNG_URL: z.url({ protocol: /^https?$/ }).optional(),
  // Brave Search API key (brave.com/search/api), sent as X-Subscription-Token.
  BRAVE_SEARCH_API_KEY: z.string().min(1).optional(),
  // Brave's web search endpoint.
  BRAVE_SEARCH_URL: z
    .url({ protocol: /^https?$/ })
    .default('https://api.search.brave.com/res/v1/web/search'),
  // Tavily API key (tvly-...), sent as a Bearer token.
  TAVILY_API_KEY: z.string().min(1).optional(),
  // Tavily's search endpoint.
  TAVILY_URL: z.url({ protocol: /^https?$/ }).default('https://api.tavily.com/search'),
  // Results one web_search hands the model (Brave and Tavily give at most 20).
  WEB_SEARCH_MAX_RESULTS: z.coerce.number().int().min(1).max(20).default(8),
  // Pages an uploaded PDF may have; a longer one is refused before any page is read.
  DOCUMENT_MAX_PAGES: z.coerce.number().int().min(1).max(10_000).default(2_000),
  // Longest the text of one uploaded PDF or DOCX is read before its worker is ended.
  DOCUMENT_EXTRACT_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(60_000),
  // Heap of the worker that reads one PDF or DOCX (MB); past it the upload is refused.
  DOCUMENT_EXTRACT_MEMORY_MB: z.coerce.number().int().min(64).default(512),
  // Bytes a DOCX (a ZIP) may unpack to, all its parts together; more is taken for a zip bomb.
  DOCUMENT_MAX_UNZIPPED_BYTES: z.coerce
    .number()
    .int()
    .min(1_048_576)
    .default(200 * 1_048_576),
  // The key that seals channel secrets at rest: base64 of 32 bytes. Unset: the key file's.
  JARVIS_SECRET_KEY: z.string().optional(),
  // Where the key is kept when JARVIS_SECRET_KEY is unset; created on first start (mode 0600).
  // The image sets /var/lib/jarvis/secrets/secret.key, on a volume of its own.
  JARVIS_SECRET_KEY_FILE: z.string().min(1).default('.data/secret.key'),
  // The web UI's address as users reach it (https://jarvis.example.com): notifications link to
  // it. Unset: they carry no link.
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  // Who runs this install, told to Web Push services in every push's VAPID signature (mailto: or
  // https:). Unset: PUBLIC_URL when it is https, else a placeholder address.
  VAPID_SUBJECT: z
    .string()
    .regex(/^(mailto:\S+@\S+|https:\/\/\S+)$/, 'a mailto: address or an https: URL')
    .optional(),
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
  // Days a browser screenshot is kept before it is deleted (the chat and run view then show none).
  SCREENSHOT_RETENTION_DAYS: Count.default(30),
  // false: the agent has no run_code tool. When true but bwrap cannot make its sandbox here, the
  // service says why at start and offers no run_code either.
  SANDBOX_ENABLED: z.stringbool().default(true),
  // The bubblewrap binary run_code's sandbox is made with.
  SANDBOX_BWRAP: z.string().min(1).default('bwrap'),
  // Where each run's directory (scratch, workspace copy, code) is made and removed again.
  SANDBOX_DIR: z.string().min(1).default(join(tmpdir(), 'jarvis-sandbox')),
  // The user the sandbox runs as when the service runs as root (bwrap runs unprivileged).
  SANDBOX_USER: z.string().min(1).default('nobody'),
  // CPU seconds each process of a run may use.
  SANDBOX_CPU_SECONDS: Count.default(30),
  // Longest one run takes, from start to its last process killed.
  SANDBOX_WALL_MS: z.coerce.number().int().min(1_000).default(60_000),
  // Memory of a whole run, all its processes together (MiB).
  SANDBOX_MEMORY_MB: z.coerce.number().int().min(64).default(512),
  // Processes and threads a run may have at once.
  SANDBOX_PROCESSES: z.coerce.number().int().min(16).default(64),
  // Bytes of stdout and stderr together a run may print; past it the run is stopped.
  SANDBOX_OUTPUT_BYTES: z.coerce.number().int().min(1_024).default(1_048_576),
  // Bytes a run may add to its directory (scratch and workspace), in MiB.
  SANDBOX_DISK_MB: Count.default(256),
  // Runs at once over all calls; more wait in a queue for as long as their call may take.
  SANDBOX_MAX_CONCURRENT: Count.default(4),

  // Bytes (MiB) of all of one user's workspace files together, every conversation and mission.
  WORKSPACE_QUOTA_MB: Count.default(500),
  // Bytes (MiB) of one workspace file, uploaded or written by a run; a larger one is not kept.
  WORKSPACE_FILE_MAX_MB: Count.default(25),
});
export type Env = z.infer<typeof Env>;

// The search provider named is refused at boot without its address or key, rather than leaving
// the agent without search and nobody told why.
const SEARCH_SETTING = {
  searxng: 'SEARXNG_URL',
  brave: 'BRAVE_SEARCH_API_KEY',
  tavily: 'TAVILY_API_KEY',
} as const;
const CheckedEnv = Env.superRefine((env, context) => {
  const provider = env.WEB_SEARCH_PROVIDER;
  if (provider && !env[SEARCH_SETTING[provider]]) {
    context.addIssue({
      code: 'custom',
      path: ['WEB_SEARCH_PROVIDER'],
      message: `${provider} needs ${SEARCH_SETTING[provider]}`,
    });
  }
});

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(CheckedEnv, source);
}
