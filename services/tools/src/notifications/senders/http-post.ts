import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import { SendError } from '../channel';

export type HttpPost = {
  url: URL;
  headers: Record<string, string>;
  body: string;
  // Values that must never reach a stored error (a token, a secret), should a server echo them.
  secrets: string[];
};

// Longest a Retry-After is honoured: a server asking for a day is retried within the hour.
const MAX_RETRY_AFTER_MS = 60 * 60_000;

// POSTs to a user-given URL through the outbound guard (the address checked is the address
// connected to), and turns every failure into a SendError. Its messages name the host only: a
// webhook URL's path is often its secret (Slack's, Discord's), and an ntfy topic is a password.
export async function postThroughGuard(
  guard: OutboundGuard,
  post: HttpPost,
  signal: AbortSignal,
): Promise<void> {
  const { url } = post;
  const status = await send(guard, post, signal).catch((error: unknown) => {
    throw toSendError(error, url, signal, post.secrets);
  });
  if (status.code >= 200 && status.code < 300) return;
  const answer = `${url.host} answered ${status.code}`;
  if (status.code === 429 || status.code === 408 || status.code >= 500) {
    throw new SendError(answer, {
      isRetryable: true,
      retryAfterMs: parseRetryAfter(status.retryAfter),
    });
  }
  throw new SendError(
    status.code >= 300 && status.code < 400
      ? `${answer}, a redirect, which is not followed`
      : answer,
    { isRetryable: false },
  );
}

type Status = { code: number; retryAfter: string | undefined };

async function send(guard: OutboundGuard, post: HttpPost, signal: AbortSignal): Promise<Status> {
  const { url } = post;
  const { lookup } = guard.connectOptions(url);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const body = Buffer.from(post.body, 'utf8');
  return new Promise<Status>((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: 'POST',
        headers: {
          'user-agent': 'Jarvis-notifications/1.0 (self-hosted assistant)',
          'content-length': String(body.length),
          ...post.headers,
        },
        // No pooled connections: each request makes its own, through the checking lookup.
        agent: false,
        lookup,
        signal,
      },
      (response) => {
        // The body is not needed, only drained, so that the connection closes cleanly.
        response.resume();
        response.on('end', () =>
          resolve({
            code: response.statusCode ?? 0,
            retryAfter: response.headers['retry-after'],
          }),
        );
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

function toSendError(error: unknown, url: URL, signal: AbortSignal, secrets: string[]): SendError {
  if (error instanceof OutboundRefusedError) {
    return new SendError(error.message, { isRetryable: false });
  }
  if (signal.aborted) {
    return new SendError(`${url.host} did not answer in time`, { isRetryable: true });
  }
  const code = error instanceof Error && 'code' in error ? String(error.code) : undefined;
  const reason = redact(error instanceof Error ? error.message : String(error), secrets);
  return new SendError(`${url.host} could not be reached${code ? ` (${code})` : ''}: ${reason}`, {
    isRetryable: true,
  });
}

// Retry-After is seconds or an HTTP date; anything else is ignored (the backoff decides).
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1_000 : undefined;
  const ms = seconds ?? Date.parse(value) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

// Belt and braces: no message passes on a secret, whatever a library or a server put in it.
export function redact(text: string, secrets: string[]): string {
  let redacted = text;
  for (const secret of secrets) if (secret) redacted = redacted.replaceAll(secret, '[secret]');
  return redacted;
}
