import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type RecordedRequest = {
  method: string;
  // The path with its query.
  path: string;
  headers: IncomingHttpHeaders;
  // The raw body, exactly as sent: a webhook's signature is over these bytes.
  body: string;
  receivedAt: number;
};

export type HttpRecorder = {
  url: string;
  requests: RecordedRequest[];
  // How to answer from now on; 200 with `{}` by default.
  respondWith(respond: (request: RecordedRequest, response: ServerResponse) => void): void;
  close(): Promise<void>;
};

// A local HTTP server that keeps every request it gets: the stand-in for what a user's
// notification channel posts to (a webhook receiver, an ntfy server), so a test reads the exact
// requests sent.
export async function startHttpRecorder(): Promise<HttpRecorder> {
  const requests: RecordedRequest[] = [];
  let respond = (_request: RecordedRequest, response: ServerResponse) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const recorded = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      requests.push(recorded);
      respond(recorded, response);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respondWith(next) {
      respond = next;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
