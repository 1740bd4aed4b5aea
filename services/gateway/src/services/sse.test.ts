import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { openSse } from './sse';

const servers: { close(): void; closeAllConnections(): void }[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

// A server whose one route opens an event stream and sends a first event.
async function serveStream(stopping: AbortSignal): Promise<string> {
  const app = express();
  app.get('/events', (_req, res) => {
    openSse(res, stopping).send('hello', { n: 1 }, 1);
  });
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
}

describe('openSse', () => {
  it('streams events, unbuffered and uncached, and ends the stream when the gateway stops', async () => {
    const stopping = new AbortController();
    const response = await fetch(await serveStream(stopping.signal));
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const body = response.text();
    stopping.abort();
    expect(await body).toBe('id: 1\nevent: hello\ndata: {"n":1}\n\n');
  });

  it('ends at once a stream opened while the gateway is already stopping', async () => {
    const stopping = new AbortController();
    stopping.abort();
    const response = await fetch(await serveStream(stopping.signal));
    expect(await response.text()).toBe('');
  });
});
