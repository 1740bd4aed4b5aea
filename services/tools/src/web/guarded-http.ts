import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { BusError } from '@jarvis/bus';
import type { OutboundGuard } from '@jarvis/net-guard';

export type GuardedRequest = {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  // Sent as is; its length is set from it.
  body?: string;
};

// One HTTP(S) request whose connection resolves the host through the guard's checking lookup:
// the address checked is the address connected to. Throws OutboundRefusedError (at once, or as
// the request's error) for a refused address. Redirects are the caller's to follow, each one a
// new request through here.
export async function requestThroughGuard(
  guard: OutboundGuard,
  url: URL,
  request: GuardedRequest,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const { lookup } = guard.connectOptions(url);
  const send: typeof httpRequest = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const body = request.body === undefined ? undefined : Buffer.from(request.body, 'utf8');
  return new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = send(
      url,
      {
        method: request.method,
        headers: {
          'accept-encoding': 'gzip, deflate, br',
          ...request.headers,
          ...(body ? { 'content-length': String(body.length) } : {}),
        },
        // No pooled connections: each request makes its own, through the checking lookup.
        agent: false,
        lookup,
        signal,
      },
      resolve,
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

// Reads up to maxBytes and drops the connection: a server cannot make the service hold more.
export async function readBody(response: IncomingMessage, maxBytes: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of decompressed(response)) {
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        return { body: Buffer.concat(chunks), isCut: true };
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    response.destroy();
  }
  return { body: Buffer.concat(chunks), isCut: false };
}

function decompressed(response: IncomingMessage): Readable {
  const encoding = (response.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return response;
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (!decoder) {
    throw new BusError('unavailable', `the answer is encoded as ${encoding}, which is not read`);
  }
  // The size cap counts decompressed bytes, so a small compressed bomb is cut like any body.
  return pipeline(response, decoder, () => {});
}
