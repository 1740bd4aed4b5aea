import { isIP } from 'node:net';
import { baseEnvShape, databaseEnvShape, parseEnv, redisEnvShape } from '@jarvis/service-kit';
import { z } from 'zod';

// Browsers send Origin as scheme://host[:port], exactly: anything else would never match.
const Origin = z
  .string()
  .refine(
    (origin) => URL.canParse(origin) && new URL(origin).origin === origin,
    'each origin is scheme://host[:port], with no path or trailing slash',
  );

// Express's named ranges, or an address or CIDR.
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const TrustedProxy = z
  .string()
  .refine(
    (entry) => PROXY_RANGES.has(entry) || isIP(entry.split('/')[0] ?? '') !== 0,
    'each entry is loopback, linklocal, uniquelocal, an IP address or a CIDR',
  );

// What express's "trust proxy" takes: false (no proxy), a number of proxy hops, or the
// addresses of trusted proxies.
const TrustProxy = z
  .string()
  .trim()
  .transform((value) => {
    if (value === 'false') return false;
    if (/^\d+$/.test(value)) return Number(value);
    return value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
  })
  .pipe(z.union([z.literal(false), z.number().int().min(1), z.array(TrustedProxy).min(1)]));

const Env = z.object({
  ...baseEnvShape,
  ...databaseEnvShape,
  ...redisEnvShape,
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
  // Largest file POST /v1/memory/documents takes as an upload (multipart/form-data), in bytes.
  DOCUMENT_UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .default(25 * 1_024 * 1_024),
  // Largest file PUT /v1/workspaces/{kind}/{id}/files/{path} takes, in MiB: refused here before
  // it reaches the tools service, whose own WORKSPACE_FILE_MAX_MB bounds what it keeps.
  WORKSPACE_FILE_MAX_MB: z.coerce.number().int().min(1).default(25),
  // Longest a chat request waits for its reply before answering 504 (the turn goes on).
  TURN_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(180_000),
  // Longest wait for a service to accept a request before answering 503/504.
  SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  // Requests one user (all their keys together) may make per minute on any /v1 route (sliding
  // window); 0: no limit.
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
  // Chat turns (POST /v1/chat) one user may start per minute, on top of that; 0: no limit.
  CHAT_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  // Requests without a valid API key one client address may make per minute; 0: no limit.
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  // Peers whose X-Forwarded-For names the client address: "false" (none), a hop count, or
  // comma-separated loopback/linklocal/uniquelocal/IPs/CIDRs. The default trusts private
  // networks, where compose's Traefik is.
  TRUST_PROXY: TrustProxy.default(['uniquelocal']),
  // Open /v1/events streams one user may hold at once, across gateway replicas; 0: no limit.
  EVENTS_MAX_STREAMS_PER_USER: z.coerce.number().int().min(0).default(10),
  // Comma-separated origins whose pages may call the API from a browser; unset: none (the web UI
  // is served from the gateway's own origin and needs none).
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((origin) => origin.trim())
        .filter(Boolean),
    )
    .pipe(z.array(Origin)),
  // Grafana's address as users' browsers reach it (https://jarvis.example.com/grafana): the web
  // UI links a run to its trace there, and alerts to their rule. Unset: no such links.
  GRAFANA_URL: z
    .url({ protocol: /^https?$/ })
    .refine((url) => !/[?#]/.test(url), 'GRAFANA_URL is a base address, with no ? or #')
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
});
export type Env = z.infer<typeof Env>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  return parseEnv(Env, source);
}

// The backup tool's own settings (`make backup`, `make restore`).
const BackupEnv = z.object({
  // The database to back up or restore into; unset: `make dev`'s embedded Postgres.
  DATABASE_URL: z.string().optional(),
  // Folder of `make dev`'s embedded Postgres, opened directly when its server is not running.
  EMBEDDED_PG_DIR: z.string().default('.data/postgres'),
  // The tools service's key file (make dev's): a backup takes it along (it must then be
  // encrypted), a restore puts it back.
  JARVIS_SECRET_KEY_FILE: z.string().default('.data/secret.key'),
  // Encrypts a backup, and decrypts an encrypted one; unset: the backup is written in the clear.
  JARVIS_BACKUP_PASSPHRASE: z
    .string()
    .min(12, 'JARVIS_BACKUP_PASSPHRASE must be at least 12 characters')
    .optional(),
});
type BackupEnv = z.infer<typeof BackupEnv>;

export function loadBackupEnv(source: Record<string, string | undefined> = process.env): BackupEnv {
  return parseEnv(BackupEnv, source);
}
