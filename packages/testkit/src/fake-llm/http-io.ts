import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { FakeError } from './types';

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function parseJsonBody(text: string): { ok: true; body: unknown } | { ok: false } {
  if (text === '') return { ok: true, body: undefined };
  try {
    return { ok: true, body: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** A held or delayed request whose client went away must not be written to. */
export function isGone(res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (isGone(res)) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export function errorHeaders(error: FakeError): Record<string, string> {
  return error.retryAfterSeconds === undefined
    ? {}
    : { 'retry-after': String(error.retryAfterSeconds) };
}

export function startStream(res: ServerResponse, contentType: string): void {
  if (isGone(res)) return;
  res.writeHead(200, {
    'content-type': contentType,
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

export function writeChunk(res: ServerResponse, text: string): void {
  if (!isGone(res)) res.write(text);
}

export function endStream(res: ServerResponse, text = ''): void {
  if (!isGone(res)) res.end(text);
}

export function writeSseData(res: ServerResponse, data: unknown): void {
  writeChunk(res, `data: ${JSON.stringify(data)}\n\n`);
}

export function writeSseEvent(res: ServerResponse, event: string, data: unknown): void {
  writeChunk(res, `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return waitUntil(
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    }),
    signal,
  );
}

/** Resolves when `promise` settles or the connection/server goes away, whichever is first. */
export function waitUntil(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      () => resolve(),
    );
  });
}
