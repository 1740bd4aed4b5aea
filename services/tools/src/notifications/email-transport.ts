import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import { createTransport } from 'nodemailer';
import { resolveThroughGuard, smtpUrl } from './address-check';
import type { SmtpConfig } from './channel';
import { SendError } from './channel';
import { redact } from './senders/http-post';

// An SMTP server and its login: a user's own (per channel) or the install's (SMTP_*).
export type SmtpServer = SmtpConfig & { password?: string | undefined };

export type SmtpEnv = {
  SMTP_HOST?: string | undefined;
  SMTP_PORT?: number | undefined;
  SMTP_SECURITY: 'tls' | 'starttls' | 'none';
  SMTP_USER?: string | undefined;
  SMTP_PASSWORD?: string | undefined;
  SMTP_FROM?: string | undefined;
};

const DEFAULT_PORTS = { tls: 465, starttls: 587, none: 25 } as const;
// Node's codes for a certificate it refused or a TLS handshake that failed.
const TLS_FAILURE =
  /^(CERT_|ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED|SELF_SIGNED_CERT|UNABLE_TO_(GET|VERIFY)|HOSTNAME_MISMATCH)/;

// The install's SMTP server, when SMTP_HOST names one.
export function installSmtpFromEnv(env: SmtpEnv): SmtpServer | undefined {
  if (!env.SMTP_HOST) return undefined;
  return {
    host: env.SMTP_HOST,
    port: env.SMTP_PORT ?? DEFAULT_PORTS[env.SMTP_SECURITY],
    security: env.SMTP_SECURITY,
    ...(env.SMTP_USER ? { user: env.SMTP_USER } : {}),
    ...(env.SMTP_PASSWORD ? { password: env.SMTP_PASSWORD } : {}),
    ...(env.SMTP_FROM ? { from: env.SMTP_FROM } : {}),
  };
}

export type SmtpConnectOptions = {
  // A user's server is connected to through the guard; the install's is the operator's own
  // (often a relay on the compose network) and is not.
  guard: OutboundGuard | undefined;
  timeoutMs: number;
};

export type Mail = { to: string; subject: string; text: string; headers?: Record<string, string> };

// Sends one mail over a connection of its own, and turns a failure into a SendError without
// secrets: retryable when the server could not be reached or answered 4xx, final when it
// refused the login, the message or the address for good, or the address is private.
export async function sendMail(
  server: SmtpServer,
  mail: Mail,
  options: SmtpConnectOptions & { signal?: AbortSignal },
): Promise<void> {
  await withTransport(server, options, async (transport) => {
    await transport.sendMail({ from: senderOf(server, mail.to), ...mail });
  });
}

// Connects and logs in, and sends nothing: what saving a channel with its own server checks.
export async function verifySmtp(
  server: SmtpServer,
  options: SmtpConnectOptions & { signal?: AbortSignal },
): Promise<void> {
  await withTransport(server, options, async (transport) => {
    await transport.verify();
  });
}

async function withTransport(
  server: SmtpServer,
  options: SmtpConnectOptions & { signal?: AbortSignal },
  use: (transport: ReturnType<typeof createTransport>) => Promise<void>,
): Promise<void> {
  const secrets = secretsOf(server);
  let transport: ReturnType<typeof createTransport> | undefined;
  const abort = () => transport?.close();
  try {
    // The address the guard checked is the one connected to; TLS still checks the host's name.
    const host = options.guard
      ? await resolveThroughGuard(options.guard, smtpUrl(server.host, server.port))
      : server.host;
    transport = createTransport({
      host,
      port: server.port,
      secure: server.security === 'tls',
      requireTLS: server.security === 'starttls',
      ignoreTLS: server.security === 'none',
      tls: { servername: server.host },
      ...(server.user ? { auth: { user: server.user, pass: server.password ?? '' } } : {}),
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
      dnsTimeout: options.timeoutMs,
    });
    options.signal?.throwIfAborted();
    options.signal?.addEventListener('abort', abort, { once: true });
    await use(transport);
  } catch (error) {
    throw toSendError(error, server.host, options.signal, secrets);
  } finally {
    options.signal?.removeEventListener('abort', abort);
    transport?.close();
  }
}

// The mail's sender: the server's `from`, else its login when that is an address, else the
// recipient (a user's own server sending to its owner).
function senderOf(server: SmtpServer, to: string): string {
  if (server.from) return server.from;
  if (server.user?.includes('@')) return server.user;
  return to;
}

function secretsOf(server: SmtpServer): string[] {
  if (!server.password) return [];
  const { user = '', password } = server;
  // A server could echo what AUTH sent: the password itself, or base64 of it (LOGIN) or of
  // "\0user\0password" (PLAIN).
  return [
    password,
    Buffer.from(password).toString('base64'),
    Buffer.from(`\0${user}\0${password}`).toString('base64'),
  ];
}

function fieldOf(error: unknown, name: string): unknown {
  return typeof error === 'object' && error !== null ? Reflect.get(error, name) : undefined;
}

function toSendError(
  error: unknown,
  host: string,
  signal: AbortSignal | undefined,
  secrets: string[],
): SendError {
  if (error instanceof SendError) return error;
  if (error instanceof OutboundRefusedError) {
    return new SendError(error.message, { isRetryable: false });
  }
  if (signal?.aborted)
    return new SendError(`${host} did not answer in time`, { isRetryable: true });
  const code = fieldOf(error, 'code');
  const responseCode = fieldOf(error, 'responseCode');
  const response = fieldOf(error, 'response');
  const said = typeof response === 'string' ? `: ${redact(response, secrets).slice(0, 300)}` : '';
  if (code === 'EAUTH' || code === 'ENOAUTH') {
    return new SendError(`${host} refused the login${said}`, { isRetryable: false });
  }
  if (typeof responseCode === 'number') {
    // Every 5yz reply is final except 503 (bad sequence), which a new connection may pass.
    const isFinal = responseCode >= 500 && responseCode !== 503;
    return new SendError(`${host} answered ${responseCode}${said}`, { isRetryable: !isFinal });
  }
  // A certificate refused, or TLS spoken to a port that does not (nodemailer calls both a
  // socket error): the server's setup, which trying again does not change.
  const originalCode = fieldOf(error, 'originalCode');
  if (
    code === 'ETLS' ||
    code === 'EREQUIRETLS' ||
    (typeof originalCode === 'string' && TLS_FAILURE.test(originalCode))
  ) {
    const what = typeof originalCode === 'string' ? `${originalCode}: ` : '';
    return new SendError(`${host}: TLS failed (${what}${redactMessage(error, secrets)})`, {
      isRetryable: false,
    });
  }
  const what = typeof code === 'string' ? ` (${code})` : '';
  return new SendError(`${host} could not be reached${what}: ${redactMessage(error, secrets)}`, {
    isRetryable: true,
  });
}

function redactMessage(error: unknown, secrets: string[]): string {
  return redact(error instanceof Error ? error.message : String(error), secrets);
}
