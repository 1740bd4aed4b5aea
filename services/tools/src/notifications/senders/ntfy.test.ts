import { createServer, type Socket } from 'node:net';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Notification, SendError, type StoredChannel } from '../channel';
import { type HttpReceiver, startHttpReceiver } from '../http-receiver-fixture';
import { createNtfySender, encodeHeaderWord } from './ntfy';

// The stand-in is on loopback, which the operator allows here as OUTBOUND_ALLOWED_HOSTS would.
const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));
const TOKEN = 'tk_0123456789abcdefghijklmnopq';

let ntfy: HttpReceiver;
beforeAll(async () => {
  ntfy = await startHttpReceiver();
});
afterAll(async () => {
  await ntfy?.close();
});

function channel(
  overrides: { url?: string; token?: string; clickUrl?: string } = {},
): StoredChannel {
  return {
    userId: '00000000-0000-4000-8000-000000000001',
    type: 'ntfy',
    config: {
      type: 'ntfy',
      url: overrides.url ?? `${ntfy.url}/push/`,
      topic: 'jarvis-alerts',
      priority: 4,
      ...(overrides.clickUrl ? { clickUrl: overrides.clickUrl } : {}),
    },
    secrets: overrides.token ? { token: overrides.token } : {},
    events: ['reminder'],
    isConfirmed: true,
    updatedAt: new Date(),
  };
}

const notification: Notification = {
  eventId: 'evt-1',
  kind: 'reminder',
  occurredAt: '2026-11-28T18:00:00.000Z',
  title: 'Reminder',
  text: 'Call the dentist',
  url: 'https://jarvis.example.com/chat/c1',
};

async function failure(promise: Promise<void>): Promise<SendError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof SendError)) throw new Error(`expected a SendError, got ${String(error)}`);
  return error;
}

describe('the ntfy sender', () => {
  it('POSTs the text to <url>/<topic> with the title, priority, click URL and token', async () => {
    ntfy.requests.length = 0;
    await createNtfySender({ guard }).send(
      channel({ token: TOKEN }),
      notification,
      AbortSignal.timeout(5_000),
    );

    expect(ntfy.requests).toHaveLength(1);
    const [request] = ntfy.requests;
    expect(request).toMatchObject({
      method: 'POST',
      path: '/push/jarvis-alerts',
      body: 'Call the dentist',
    });
    expect(request?.headers).toMatchObject({
      title: 'Reminder',
      priority: '4',
      click: 'https://jarvis.example.com/chat/c1',
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'text/plain; charset=utf-8',
    });
  });

  it("sends no token it has not got, prefers the channel's click URL, and encodes a title that is not ASCII", async () => {
    ntfy.requests.length = 0;
    const title = 'Rappel : café ☕';
    await createNtfySender({ guard }).send(
      channel({ clickUrl: 'https://example.com/mine' }),
      { ...notification, title },
      AbortSignal.timeout(5_000),
    );

    const headers = ntfy.requests[0]?.headers ?? {};
    expect(headers.authorization).toBeUndefined();
    expect(headers.click).toBe('https://example.com/mine');
    expect(headers.title).toBe(encodeHeaderWord(title));
    const encoded = /^=\?UTF-8\?B\?(.*)\?=$/.exec(String(headers.title))?.[1] ?? '';
    expect(Buffer.from(encoded, 'base64').toString('utf8')).toBe(title);
  });

  it('retries after a 429 as long as Retry-After says, and after a 5xx; a 4xx is final', async () => {
    const sender = createNtfySender({ guard });
    ntfy.respondWith((_request, response) => {
      response.writeHead(429, { 'retry-after': '7' }).end();
    });
    const limited = await failure(
      sender.send(channel({ token: TOKEN }), notification, AbortSignal.timeout(5_000)),
    );
    expect(limited).toMatchObject({ isRetryable: true, retryAfterMs: 7_000 });

    // Retry-After as an HTTP date: about 30 s from now.
    ntfy.respondWith((_request, response) => {
      response.writeHead(503, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }).end();
    });
    const unavailable = await failure(
      sender.send(channel(), notification, AbortSignal.timeout(5_000)),
    );
    expect(unavailable.isRetryable).toBe(true);
    expect(unavailable.retryAfterMs).toBeGreaterThan(25_000);
    expect(unavailable.retryAfterMs).toBeLessThanOrEqual(30_000);

    ntfy.respondWith((_request, response) => {
      response.writeHead(502).end();
    });
    expect(
      await failure(sender.send(channel(), notification, AbortSignal.timeout(5_000))),
    ).toMatchObject({
      isRetryable: true,
      retryAfterMs: undefined,
    });

    ntfy.respondWith((_request, response) => {
      response.writeHead(403).end('{"error":"forbidden"}');
    });
    const refused = await failure(
      sender.send(channel({ token: TOKEN }), notification, AbortSignal.timeout(5_000)),
    );
    expect(refused.isRetryable).toBe(false);
    expect(refused.message).toBe(`${new URL(ntfy.url).host} answered 403`);
    // Neither the token nor the topic (a password of sorts) is in what the history shows.
    for (const error of [limited, refused]) {
      expect(error.message).not.toContain(TOKEN);
      expect(error.message).not.toContain('jarvis-alerts');
    }
    ntfy.respondWith((_request, response) => {
      response.writeHead(200).end();
    });
  });

  it('counts a server that does not answer in time, or is not there, as retryable', async () => {
    // Reads nothing and answers nothing; its sockets are destroyed when it closes.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const sender = createNtfySender({ guard });

    const timedOut = await failure(
      sender.send(
        channel({ url: `http://127.0.0.1:${port}` }),
        notification,
        AbortSignal.timeout(300),
      ),
    );
    expect(timedOut).toMatchObject({
      isRetryable: true,
      message: `127.0.0.1:${port} did not answer in time`,
    });

    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
    const refused = await failure(
      sender.send(
        channel({ url: `http://127.0.0.1:${port}` }),
        notification,
        AbortSignal.timeout(5_000),
      ),
    );
    expect(refused.isRetryable).toBe(true);
    expect(refused.message).toContain('ECONNREFUSED');
  });

  it('never connects to a private address the operator has not allowed', async () => {
    ntfy.requests.length = 0;
    const strict = createOutboundGuard([]);

    const error = await failure(
      createNtfySender({ guard: strict }).send(channel(), notification, AbortSignal.timeout(5_000)),
    );

    expect(error.isRetryable).toBe(false);
    expect(error.message).toMatch(/private or local address/);
    expect(ntfy.requests).toHaveLength(0);
  });
});
