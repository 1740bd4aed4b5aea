import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceivedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  // The raw body, as signed.
  body: string;
};

// How the receiver answers one request; by default 200 with an empty JSON body.
type Responder = (request: ReceivedRequest, response: ServerResponse) => void;

export type HttpReceiver = {
  // http://127.0.0.1:<port>
  url: string;
  requests: ReceivedRequest[];
  respondWith(responder: Responder): void;
  close(): Promise<void>;
};

// A real HTTP server on loopback that stands in for an ntfy server or a webhook receiver: it
// records every request as it came, and answers as the test tells it.
export async function startHttpReceiver(): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  let responder: Responder = (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  };
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const request = {
        method: incoming.method ?? '',
        path: incoming.url ?? '',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(request);
      responder(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respondWith(next) {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
