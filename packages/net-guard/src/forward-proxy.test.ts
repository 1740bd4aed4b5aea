import { readFileSync } from 'node:fs';
import { Agent, createServer as createHttpServer, request, type Server } from 'node:http';
import {
  connect,
  createServer as createTcpServer,
  type Socket,
  type Server as TcpServer,
} from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundAllowedHosts } from './allowed-hosts';
import { type GuardedProxy, startGuardedProxy } from './forward-proxy';
import { createOutboundGuard } from './outbound-guard';

// Real sockets end to end: a client speaking to the proxy, the proxy to servers on loopback.
// Loopback is private, so the guard allows exactly the two servers' host:port entries; the
// counting listener, on another port, stands for everything the guard refuses and must see no
// connection at all.
const BIG_BODY = 'x'.repeat(20_000);

let site: Server; // the allowed HTTP server
let sitePort: number;
const siteRequests: { url: string; headers: Record<string, unknown>; body?: string }[] = [];
let echo: TcpServer; // the allowed TCP server behind CONNECT: says hello, then echoes
let echoPort: number;
let counting: TcpServer; // 127.0.0.1 and, where the machine has it, ::1 on one port
let counting6: TcpServer | undefined;
let countPort: number;
let hits = 0;
let proxy: GuardedProxy;

function listen(server: Server | TcpServer, host: string, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

// The names this machine's /etc/hosts maps to a loopback address (localhost, and others).
function loopbackNamesInHosts(): string[] {
  const names = new Set<string>(['localhost']);
  for (const line of readFileSync('/etc/hosts', 'utf8').split('\n')) {
    const [address, ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (address && (/^127\./.test(address) || address === '::1')) {
      for (const alias of aliases) names.add(alias);
    }
  }
  return [...names];
}

beforeAll(async () => {
  site = createHttpServer((incoming, response) => {
    if (incoming.url === '/form') {
      let body = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => {
        body += chunk;
      });
      incoming.on('end', () => {
        siteRequests.push({ url: '/form', headers: { ...incoming.headers }, body });
        response.end('got it');
      });
      return;
    }
    siteRequests.push({ url: incoming.url ?? '', headers: { ...incoming.headers } });
    if (incoming.url === '/big') return response.end(BIG_BODY);
    // The same length, in chunks and with no Content-Length: only counting finds it too long.
    if (incoming.url === '/big-chunked') {
      for (let sent = 0; sent < BIG_BODY.length; sent += 2_000) response.write('x'.repeat(2_000));
      return response.end();
    }
    if (incoming.url === '/redirect') {
      response.writeHead(302, { location: `http://127.0.0.1:${countPort}/` });
      return response.end();
    }
    response.setHeader('connection', 'close, x-hop');
    response.setHeader('x-hop', 'one hop only');
    response.end(`hello ${incoming.method} ${incoming.url}`);
  });
  // A websocket-like upgrade: 101, then it echoes.
  site.on('upgrade', (incoming, socket) => {
    siteRequests.push({ url: incoming.url ?? '', headers: { ...incoming.headers } });
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    );
    socket.pipe(socket);
  });
  sitePort = await listen(site, '127.0.0.1');
  echo = createTcpServer((socket) => {
    socket.write('hello\n');
    socket.pipe(socket);
  });
  echoPort = await listen(echo, '127.0.0.1');
  counting = createTcpServer((socket) => {
    hits += 1;
    socket.destroy();
  });
  countPort = await listen(counting, '127.0.0.1');
  try {
    counting6 = createTcpServer((socket) => {
      hits += 1;
      socket.destroy();
    });
    await listen(counting6, '::1', countPort);
  } catch {
    counting6 = undefined;
  }
  const guard = createOutboundGuard(
    OutboundAllowedHosts.parse(`127.0.0.1:${sitePort},127.0.0.1:${echoPort}`),
  );
  proxy = await startGuardedProxy({ guard });
});

afterAll(async () => {
  await proxy.close();
  const servers = [site, echo, counting, counting6].filter((server) => server !== undefined);
  site.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
});

function authorization(session: { username: string; password: string }): string {
  return `Basic ${Buffer.from(`${session.username}:${session.password}`).toString('base64')}`;
}

type Answer = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  isCut: boolean;
};

// An absolute-form request through the proxy, as a browser sends plain http.
function get(url: string, proxyAuthorization?: string): Promise<Answer> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port,
        path: url,
        headers: {
          host: new URL(url).host,
          ...(proxyAuthorization ? { 'proxy-authorization': proxyAuthorization } : {}),
        },
        agent: false,
      },
      (response) => {
        let body = '';
        const done = (isCut: boolean) =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body, isCut });
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => done(!response.complete));
        response.on('error', () => done(true));
        response.on('aborted', () => done(true));
      },
    );
    sent.on('error', reject);
    sent.end();
  });
}

type Opened = { status: number; head: string; socket: Socket; rest: Buffer };

// Sends a request head on a raw socket to the proxy (CONNECT, or an upgrade) and reads the
// answer's head; `rest` is what came after it.
function openRaw(head: string): Promise<Opened> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.pause();
      const text = received.subarray(0, end).toString('latin1');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        head: text,
        socket,
        rest: received.subarray(end + 4),
      });
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

function connectThrough(authority: string, proxyAuthorization?: string): Promise<Opened> {
  return openRaw(
    `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${
      proxyAuthorization ? `Proxy-Authorization: ${proxyAuthorization}\r\n` : ''
    }\r\n`,
  );
}

// All the socket's remaining bytes, until the peer closes it.
function readToEnd(opened: Opened): Promise<string> {
  return new Promise((resolve) => {
    const chunks = [opened.rest];
    opened.socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    opened.socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    opened.socket.resume();
  });
}

// Reads from the socket until `text` has come (after what the head's read left over).
function readUntil(opened: Opened, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = opened.rest.toString('utf8');
    opened.rest = Buffer.alloc(0);
    if (received.includes(text)) return resolve(received);
    const onData = (chunk: Buffer) => {
      received += chunk.toString('utf8');
      if (!received.includes(text)) return;
      opened.socket.off('data', onData);
      resolve(received);
    };
    opened.socket.on('data', onData);
    opened.socket.once('close', () =>
      reject(new Error(`closed after ${JSON.stringify(received)}`)),
    );
    opened.socket.resume();
  });
}

function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve();
    socket.once('close', () => resolve());
    socket.resume();
  });
}

describe('the guarded forward proxy', () => {
  it('tunnels CONNECT to an allowed host:port, bytes both ways, and counts what came back', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(session));
    expect(tunnel.status).toBe(200);
    expect(await readUntil(tunnel, 'hello\n')).toBe('hello\n');
    tunnel.socket.write('ping');
    expect(await readUntil(tunnel, 'ping')).toBe('ping');
    expect(session.bytesReceived()).toBe('hello\nping'.length);
    tunnel.socket.destroy();
    expect(session.refusals()).toEqual([]);
    session.close();
  });

  it('refuses CONNECT to loopback, private and metadata addresses in any spelling, and names that resolve to them, before connecting', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const names = loopbackNamesInHosts();
    const authorities = [
      `127.0.0.1:${countPort}`,
      `127.0.0.1.:${countPort}`,
      `%31%32%37.0.0.1:${countPort}`,
      `LOCALHOST:${countPort}`,
      `127.1:${countPort}`,
      `2130706433:${countPort}`,
      `0x7f000001:${countPort}`,
      `0177.0.0.1:${countPort}`,
      `0.0.0.0:${countPort}`,
      `[::]:${countPort}`,
      `[::1]:${countPort}`,
      `[::ffff:127.0.0.1]:${countPort}`,
      `[::ffff:7f00:1]:${countPort}`,
      `[64:ff9b::7f00:1]:${countPort}`,
      `[2002:7f00:1::]:${countPort}`,
      `10.0.0.1:${countPort}`,
      `172.16.0.1:${countPort}`,
      `192.168.0.1:${countPort}`,
      `100.64.0.1:${countPort}`,
      `169.254.169.254:80`,
      `[fd00:ec2::254]:80`,
      `metadata.google.internal:80`,
      // The allowed server's address at another port is not allowed.
      `127.0.0.1:${sitePort === 1 ? 2 : sitePort - 1}`,
      ...names.map((name) => `${name}:${countPort}`),
    ];
    for (const authority of authorities) {
      const answer = await connectThrough(authority, authorization(session));
      expect(answer.status, authority).toBe(403);
      expect(await readToEnd(answer), authority).toMatch(/^refused to connect: /);
    }
    // Each name was resolved at connect time, and refused for what it resolved to.
    const refusals = session.refusals();
    expect(refusals).toHaveLength(authorities.length);
    for (const name of names) {
      const refusal = refusals.find((one) => one.host === name);
      expect(refusal?.address, name).toMatch(/^(127\.|::1$)/);
      expect(refusal?.reason).toBe('private');
    }
    expect(refusals.find((one) => one.address === '169.254.169.254')?.reason).toBe('metadata');
    expect(hits).toBe(0);
    session.close();
  });

  it('forwards an absolute-form GET to an allowed host without the proxy credentials, and refuses one to loopback', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const before = siteRequests.length;
    const ok = await get(`http://127.0.0.1:${sitePort}/hello?x=1`, authorization(session));
    expect(ok).toMatchObject({ status: 200, body: 'hello GET /hello?x=1', isCut: false });
    // The upstream's hop-by-hop headers stay on its hop.
    expect(ok.headers['x-hop']).toBeUndefined();
    const seen = siteRequests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.headers['proxy-authorization']).toBeUndefined();
    expect(seen[0]?.headers.host).toBe(`127.0.0.1:${sitePort}`);
    expect(session.bytesReceived()).toBeGreaterThan('hello GET /hello?x=1'.length);

    for (const url of [
      `http://127.0.0.1:${countPort}/`,
      `http://localhost:${countPort}/`,
      `http://[::ffff:7f00:1]:${countPort}/`,
      `http://2130706433:${countPort}/`,
    ]) {
      const refused = await get(url, authorization(session));
      expect(refused.status, url).toBe(403);
      expect(refused.body, url).toMatch(
        /^refused to connect: \S+ is (\S+, )?a private or local address that OUTBOUND_ALLOWED_HOSTS does not name$/,
      );
    }
    expect(session.refusals()).toHaveLength(4);
    expect(hits).toBe(0);
    session.close();
  });

  it('carries many requests on one keep-alive connection, each authenticated', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const { port } = new URL(proxy.url);
    const sockets = new Set<unknown>();
    const once = (proxyAuthorization: string) =>
      new Promise<number>((resolve, reject) => {
        const sent = request(
          {
            host: '127.0.0.1',
            port,
            path: `http://127.0.0.1:${sitePort}/hello`,
            headers: { host: `127.0.0.1:${sitePort}`, 'proxy-authorization': proxyAuthorization },
            agent,
          },
          (response) => {
            response.resume();
            response.on('end', () => resolve(response.statusCode ?? 0));
          },
        );
        sent.on('socket', (socket) => sockets.add(socket));
        sent.on('error', reject);
        sent.end();
      });
    for (let index = 0; index < 15; index += 1)
      expect(await once(authorization(session))).toBe(200);
    expect(sockets.size).toBe(1);
    expect(await once('Basic eDp5')).toBe(407);
    agent.destroy();
    session.close();
  });

  it('sends a request body upstream, and answers 403 to a POST whose name resolves to loopback', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const post = (url: string) =>
      openRaw(
        `POST ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Length: 11\r\n` +
          `Proxy-Authorization: ${authorization(session)}\r\n\r\nhello there`,
      );
    const sent = await post(`http://127.0.0.1:${sitePort}/form`);
    expect(sent.status).toBe(200);
    expect(siteRequests.at(-1)?.body).toBe('hello there');
    sent.socket.destroy();
    // Refused while its body is still coming: the 403 is still the answer.
    const refused = await openRaw(
      `POST http://localhost:${countPort}/form HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n` +
        `Proxy-Authorization: ${authorization(session)}\r\n\r\nthe first bytes`,
    );
    expect(refused.status).toBe(403);
    refused.socket.destroy();
    expect(hits).toBe(0);
    session.close();
  });

  it('passes a redirect on as is: the next hop is a new request, checked again', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const redirect = await get(`http://127.0.0.1:${sitePort}/redirect`, authorization(session));
    expect(redirect.status).toBe(302);
    const location = String(redirect.headers.location);
    expect(location).toBe(`http://127.0.0.1:${countPort}/`);
    expect((await get(location, authorization(session))).status).toBe(403);
    expect(hits).toBe(0);
    session.close();
  });

  it('answers only absolute http:// requests', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const relative = await openRaw(
      `GET / HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${authorization(session)}\r\n\r\n`,
    );
    expect(relative.status).toBe(400);
    relative.socket.destroy();
    const https = await openRaw(
      `GET https://127.0.0.1:${sitePort}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${authorization(session)}\r\n\r\n`,
    );
    expect(https.status).toBe(400);
    https.socket.destroy();
    const noPort = await connectThrough('127.0.0.1', authorization(session));
    expect(noPort.status).toBe(400);
    noPort.socket.destroy();
    session.close();
  });

  it('upgrades a websocket over plain http to an allowed host, and refuses one to loopback', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const upgrade = (url: string) =>
      openRaw(
        `GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
          `Proxy-Authorization: ${authorization(session)}\r\n\r\n`,
      );
    const open = await upgrade(`http://127.0.0.1:${sitePort}/ws`);
    expect(open.status).toBe(101);
    expect(siteRequests.at(-1)?.headers.upgrade).toBe('websocket');
    expect(siteRequests.at(-1)?.headers['proxy-authorization']).toBeUndefined();
    open.socket.write('frame');
    expect(await readUntil(open, 'frame')).toBe('frame');
    open.socket.destroy();

    const refused = await upgrade(`http://localhost:${countPort}/ws`);
    expect(refused.status).toBe(403);
    expect(await readToEnd(refused)).toMatch(/^refused to connect: localhost is /);
    expect(hits).toBe(0);
    session.close();
  });

  it('answers 407 with Proxy-Authenticate: Basic to missing, wrong and unknown credentials, before connecting', async () => {
    const session = proxy.openSession({ maxBytes: 1_000_000 });
    const before = siteRequests.length;
    const wrong = [
      undefined,
      authorization({ username: session.username, password: `${session.password}x` }),
      authorization({ username: session.username, password: '' }),
      authorization({ username: 'nobody', password: session.password }),
      `Bearer ${session.password}`,
      'Basic !!!',
    ];
    for (const header of wrong) {
      const answer = await get(`http://127.0.0.1:${sitePort}/hello`, header);
      expect(answer.status, String(header)).toBe(407);
      expect(answer.headers['proxy-authenticate']).toMatch(/^Basic /);
      const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, header);
      expect(tunnel.status, String(header)).toBe(407);
      expect(tunnel.head).toMatch(/\r\nProxy-Authenticate: Basic /);
      tunnel.socket.destroy();
    }
    expect(siteRequests.length).toBe(before);
    expect(session.bytesReceived()).toBe(0);
    session.close();
  });

  it('cuts an HTTP answer past the byte limit, and refuses the session until its bytes are reset', async () => {
    const session = proxy.openSession({ maxBytes: 5_000 });
    const cut = await get(`http://127.0.0.1:${sitePort}/big-chunked`, authorization(session));
    expect(cut.status).toBe(200);
    expect(cut.isCut).toBe(true);
    expect(cut.body.length).toBeLessThan(5_000);
    expect(session.bytesReceived()).toBeGreaterThan(5_000);
    expect(session.isOverLimit()).toBe(true);

    const after = await get(`http://127.0.0.1:${sitePort}/hello`, authorization(session));
    expect(after).toMatchObject({
      status: 403,
      body: 'byte limit: more than 5000 bytes received for this session',
    });
    const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(session));
    expect(tunnel.status).toBe(403);
    expect(await readToEnd(tunnel)).toMatch(/^byte limit: /);

    session.resetBytes();
    expect(session.bytesReceived()).toBe(0);
    expect(session.isOverLimit()).toBe(false);
    expect((await get(`http://127.0.0.1:${sitePort}/hello`, authorization(session))).status).toBe(
      200,
    );
    session.close();
  });

  it('refuses whole, with a 403, an answer whose Content-Length is past the byte limit', async () => {
    const session = proxy.openSession({ maxBytes: 5_000 });
    const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(session));
    await readUntil(tunnel, 'hello\n');
    const refused = await get(`http://127.0.0.1:${sitePort}/big`, authorization(session));
    expect(refused).toMatchObject({
      status: 403,
      body: 'byte limit: more than 5000 bytes received for this session',
      isCut: false,
    });
    expect(session.isOverLimit()).toBe(true);
    expect(session.bytesReceived()).toBeLessThan(5_000);
    // The session's other connections are cut with it.
    await closed(tunnel.socket);
    session.close();
  });

  it('cuts a tunnel past the byte limit', async () => {
    const session = proxy.openSession({ maxBytes: 1_000 });
    const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(session));
    expect(tunnel.status).toBe(200);
    await readUntil(tunnel, 'hello\n');
    const received = readToEnd(tunnel);
    tunnel.socket.write('y'.repeat(3_000));
    expect((await received).length).toBeLessThan(1_000);
    expect(session.bytesReceived()).toBeGreaterThan(1_000);
    session.close();
  });

  it('cuts every tunnel when it closes, and stops listening', async () => {
    const guard = createOutboundGuard(OutboundAllowedHosts.parse(`127.0.0.1:${echoPort}`));
    const closing = await startGuardedProxy({ guard });
    const session = closing.openSession({ maxBytes: 1_000_000 });
    const { port } = new URL(closing.url);
    const tunnel = await new Promise<Socket>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(
          `CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nProxy-Authorization: ${authorization(session)}\r\n\r\n`,
        ),
      );
      socket.once('data', () => resolve(socket));
      socket.on('error', reject);
    });
    await closing.close();
    await closed(tunnel);
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1');
      socket.on('connect', () => resolve('connected'));
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('closes a session: its tunnels are cut and its credentials get 407, other sessions go on', async () => {
    const closing = proxy.openSession({ maxBytes: 1_000_000 });
    const other = proxy.openSession({ maxBytes: 1_000_000 });
    expect(other.username).not.toBe(closing.username);
    const tunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(closing));
    const otherTunnel = await connectThrough(`127.0.0.1:${echoPort}`, authorization(other));
    await readUntil(tunnel, 'hello\n');
    await readUntil(otherTunnel, 'hello\n');
    await get(`http://127.0.0.1:${countPort}/`, authorization(closing));

    closing.close();
    await closed(tunnel.socket);
    expect((await get(`http://127.0.0.1:${sitePort}/hello`, authorization(closing))).status).toBe(
      407,
    );
    // The other session's tunnel still works, and the closed one's refusal is not its own.
    otherTunnel.socket.write('still');
    expect(await readUntil(otherTunnel, 'still')).toBe('still');
    expect(other.refusals()).toEqual([]);
    expect(closing.refusals()).toHaveLength(1);
    otherTunnel.socket.destroy();
    other.close();
  });
});
