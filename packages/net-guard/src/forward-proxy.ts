import { randomBytes, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { connect } from 'node:net';
import { type Duplex, pipeline, Transform } from 'node:stream';
import { type OutboundGuard, OutboundRefusedError } from './outbound-guard';

// The methods used, so a pino logger fits without this package depending on telemetry.
export type ProxyLogger = {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
};

export type ProxySession = {
  // Credentials for a Playwright context's `proxy`; each request must carry them.
  username: string;
  password: string;
  // Bytes received from upstream servers for this session (headers and bodies, tunnels).
  bytesReceived(): number;
  // Starts a new byte budget: the count goes back to 0 and a session cut for its bytes works again.
  resetBytes(): void;
  // True from the moment the session went over maxBytes (or an answer said it would) until
  // resetBytes: its connections were cut and new ones get 403 "byte limit".
  isOverLimit(): boolean;
  // The connections the guard refused, in order (the first 100).
  refusals(): OutboundRefusedError[];
  // Cuts the session's connections; its credentials get 407 from then on.
  close(): void;
};

export type GuardedProxy = {
  // http://127.0.0.1:<port>
  url: string;
  openSession(options: { maxBytes: number }): ProxySession;
  close(): Promise<void>;
};

type SessionState = {
  password: Buffer;
  maxBytes: number;
  bytes: number;
  isOverBudget: boolean;
  refused: OutboundRefusedError[];
  // Sockets of the session's connections in flight, both sides: cut together.
  live: Set<Duplex>;
};

// Headers that describe one hop, never forwarded (RFC 9110 7.6.1), plus the proxy's own.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

const REALM = 'Basic realm="jarvis"';
const MAX_REFUSALS_KEPT = 100;

// An HTTP forward proxy on loopback for a browser that must not reach what the guard refuses:
// every upstream connection (CONNECT tunnels for https and websockets, absolute-form HTTP
// requests and their websocket upgrades) resolves its host through the guard's checked lookup,
// so the address checked is the address connected to, whatever the browser thinks the name
// means. Redirects are the browser's new requests, each checked here again. Written on
// node:http/net because the proxy packages connect with their own DNS lookup and have no
// per-session credentials or byte accounting.
export async function startGuardedProxy(options: {
  guard: OutboundGuard;
  logger?: ProxyLogger;
}): Promise<GuardedProxy> {
  const { guard, logger } = options;
  const sessions = new Map<string, SessionState>();
  // Every client socket, tunnels included (the HTTP server forgets a socket once it is a tunnel).
  const sockets = new Set<Duplex>();

  const track = (session: SessionState, ...ends: Duplex[]) => {
    for (const end of ends) {
      // A keep-alive connection carries many requests: one listener for all of them.
      if (session.live.has(end)) continue;
      session.live.add(end);
      end.once('close', () => session.live.delete(end));
    }
  };

  const cut = (session: SessionState) => {
    for (const end of session.live) end.destroy();
    session.live.clear();
  };

  // Marks the session over its budget and cuts its connections, but for `spared`, which answers
  // the 403 itself.
  const exceed = (session: SessionState, spared?: Duplex) => {
    session.isOverBudget = true;
    logger?.warn(
      { maxBytes: session.maxBytes, bytes: session.bytes },
      'proxy session went over its byte limit; its connections are cut',
    );
    for (const end of session.live) if (end !== spared) end.destroy();
  };

  // False once the session has received more than its budget: its connections are cut then.
  const account = (session: SessionState, bytes: number): boolean => {
    if (session.isOverBudget) return false;
    session.bytes += bytes;
    if (session.bytes <= session.maxBytes) return true;
    exceed(session);
    return false;
  };

  const counter = (session: SessionState) =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        if (account(session, chunk.length)) done(null, chunk);
        else done(new Error('byte limit'));
      },
    });

  // Joins a client to its upstream both ways, counting what comes back. Plain pipes, not two
  // pipelines: each pipeline adds its own listeners to both sockets, past the warning limit.
  const splice = (session: SessionState, client: Duplex, upstream: Duplex) => {
    const counted = counter(session);
    // A cut (the byte limit) has already destroyed both sockets.
    counted.on('error', () => {});
    upstream.on('error', () => upstream.destroy());
    client.on('error', () => client.destroy());
    upstream.once('close', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.pipe(counted).pipe(client);
    client.pipe(upstream);
  };

  const authenticate = (headers: IncomingHttpHeaders): SessionState | undefined => {
    const match = /^basic\s+(\S+)\s*$/i.exec(headers['proxy-authorization'] ?? '');
    if (!match?.[1]) return undefined;
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return undefined;
    const session = sessions.get(decoded.slice(0, colon));
    if (!session) return undefined;
    const password = Buffer.from(decoded.slice(colon + 1), 'utf8');
    if (password.length !== session.password.length) return undefined;
    return timingSafeEqual(password, session.password) ? session : undefined;
  };

  const refuse = (session: SessionState, error: OutboundRefusedError): string => {
    // The first ones say why a page failed; a page that asks a million times does not hold them all.
    if (session.refused.length < MAX_REFUSALS_KEPT) session.refused.push(error);
    logger?.info(
      { host: error.host, address: error.address, reason: error.reason },
      'proxy refused a connection',
    );
    return `refused to connect: ${error.message}`;
  };

  // connectOptions throws only refusals; anything else is still no connection.
  const refusalText = (session: SessionState, error: unknown): string =>
    error instanceof OutboundRefusedError
      ? refuse(session, error)
      : `refused to connect: ${error instanceof Error ? error.message : String(error)}`;

  // A connection that failed before any answer: refused by the guard's lookup, or unreachable.
  const upstreamFailure = (
    session: SessionState,
    host: string,
    error: Error,
  ): { status: 403 | 502; text: string } =>
    error instanceof OutboundRefusedError
      ? { status: 403, text: refuse(session, error) }
      : { status: 502, text: `could not reach ${host}: ${error.message}` };

  // Why this session may not open a connection now, as the 403's text; undefined when it may.
  const blockedBecause = (session: SessionState): string | undefined =>
    session.isOverBudget
      ? `byte limit: more than ${session.maxBytes} bytes received for this session`
      : undefined;

  // For a CONNECT tunnel or an upgrade, where the socket is ours to answer on.
  const answerRaw = (
    socket: Duplex,
    status: 400 | 403 | 407 | 502,
    text: string,
    extra: string[] = [],
  ) => {
    const reason = {
      400: 'Bad Request',
      403: 'Forbidden',
      407: 'Proxy Authentication Required',
      502: 'Bad Gateway',
    }[status];
    const body = Buffer.from(text, 'utf8');
    socket.end(
      Buffer.concat([
        Buffer.from(
          [
            `HTTP/1.1 ${status} ${reason}`,
            ...extra,
            'Content-Type: text/plain; charset=utf-8',
            `Content-Length: ${body.length}`,
            'Connection: close',
            '',
            '',
          ].join('\r\n'),
          'latin1',
        ),
        body,
      ]),
    );
  };

  const answer = (response: ServerResponse, status: number, text: string, headers = {}) => {
    const body = Buffer.from(text, 'utf8');
    response.writeHead(status, {
      ...headers,
      'content-type': 'text/plain; charset=utf-8',
      'content-length': body.length,
    });
    response.end(body);
  };

  // The target of an absolute-form request; undefined for anything but plain http (https comes
  // through CONNECT, which the browser uses for it).
  const absoluteTarget = (requestUrl: string | undefined): URL | undefined => {
    if (!requestUrl || !/^http:\/\//i.test(requestUrl)) return undefined;
    try {
      const url = new URL(requestUrl);
      return url.username || url.password ? undefined : url;
    } catch {
      return undefined;
    }
  };

  // The headers to send upstream: the client's, less what belongs to the hop to the proxy.
  const forwardedHeaders = (raw: string[], keepUpgrade: boolean): string[] => {
    const named = new Set(
      raw
        .filter((_, index) => index % 2 === 0)
        .flatMap((name, index) =>
          name.toLowerCase() === 'connection'
            ? (raw[index * 2 + 1] ?? '').split(',').map((token) => token.trim().toLowerCase())
            : [],
        ),
    );
    const kept: string[] = [];
    for (let index = 0; index + 1 < raw.length; index += 2) {
      const name = raw[index] ?? '';
      const lower = name.toLowerCase();
      const isUpgradeHeader = keepUpgrade && (lower === 'upgrade' || lower === 'connection');
      if (lower === 'host') continue;
      if (!isUpgradeHeader && (HOP_BY_HOP.has(lower) || named.has(lower))) continue;
      kept.push(name, raw[index + 1] ?? '');
    }
    return kept;
  };

  const responseHeaders = (headers: IncomingHttpHeaders): IncomingHttpHeaders => {
    const named = new Set(
      String(headers.connection ?? '')
        .split(',')
        .map((token) => token.trim().toLowerCase()),
    );
    return Object.fromEntries(
      Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && !named.has(name)),
    );
  };

  const rawHeadLength = (message: IncomingMessage) =>
    message.rawHeaders.reduce((sum, part) => sum + part.length + 2, 16);

  // An upstream request through the guard's lookup; undefined (and the refusal answered by
  // onRefused) when the address is refused before any connection.
  const openUpstream = (
    session: SessionState,
    target: URL,
    request: IncomingMessage,
    keepUpgrade: boolean,
    onRefused: (text: string) => void,
  ) => {
    let lookup: ReturnType<OutboundGuard['connectOptions']>['lookup'];
    try {
      ({ lookup } = guard.connectOptions(target));
    } catch (error) {
      onRefused(refusalText(session, error));
      return undefined;
    }
    const upstream = httpRequest({
      host: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: target.port || 80,
      method: request.method,
      path: `${target.pathname}${target.search}`,
      // The Host the connection goes to, not one the client chose.
      headers: ['Host', target.host, ...forwardedHeaders(request.rawHeaders, keepUpgrade)],
      // No pooled connection: each one is made, and checked, for this request.
      agent: false,
      lookup,
      setHost: false,
    });
    upstream.on('socket', (socket) => track(session, socket));
    return upstream;
  };

  const server = createServer((request, response) => {
    const session = authenticate(request.headers);
    if (!session) {
      return answer(response, 407, 'proxy credentials required', {
        'proxy-authenticate': REALM,
      });
    }
    const target = absoluteTarget(request.url);
    if (!target) {
      return answer(response, 400, 'only absolute http:// requests and CONNECT are proxied');
    }
    const blocked = blockedBecause(session);
    if (blocked) return answer(response, 403, blocked);
    track(session, request.socket);
    const upstream = openUpstream(session, target, request, false, (text) =>
      answer(response, 403, text),
    );
    if (!upstream) return;
    upstream.on('response', (incoming) => {
      if (!account(session, rawHeadLength(incoming))) return;
      // An answer that says it is too long is refused whole: a browser shows a 403 at once, where
      // a body cut halfway leaves it waiting for a page that never finishes loading.
      const declared = Number(incoming.headers['content-length'] ?? Number.NaN);
      if (session.bytes + declared > session.maxBytes) {
        upstream.destroy();
        exceed(session, request.socket);
        return answer(response, 403, blockedBecause(session) ?? 'byte limit', {
          connection: 'close',
        });
      }
      response.writeHead(incoming.statusCode ?? 502, responseHeaders(incoming.headers));
      // The head goes out now, so a body cut at the byte limit reads as a cut body, not as no answer.
      response.flushHeaders();
      pipeline(incoming, counter(session), response, () => {});
    });
    upstream.on('error', (error) => {
      if (response.headersSent) return response.destroy();
      const failure = upstreamFailure(session, target.host, error);
      answer(response, failure.status, failure.text);
    });
    response.on('close', () => upstream.destroy());
    // A pipe, not a pipeline: a refused upstream must leave the client's socket alive for the 403.
    request.on('error', () => upstream.destroy());
    request.pipe(upstream);
  });

  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  // https and websockets from a browser: a tunnel to host:port, opened through the guard's lookup.
  server.on('connect', (request: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => client.destroy());
    const session = authenticate(request.headers);
    if (!session) {
      return answerRaw(client, 407, 'proxy credentials required', [`Proxy-Authenticate: ${REALM}`]);
    }
    const blocked = blockedBecause(session);
    if (blocked) return answerRaw(client, 403, blocked);
    const authority = /^(\[[0-9a-f:.]+\]|[^\s/?#@[\]:]+):(\d{1,5})$/i.exec(request.url ?? '');
    let target: URL | undefined;
    try {
      target = authority ? new URL(`http://${authority[1]}:${authority[2]}`) : undefined;
    } catch {
      target = undefined;
    }
    if (!target || !authority) return answerRaw(client, 400, 'CONNECT needs host:port');
    const port = Number(authority[2]);
    let lookup: ReturnType<OutboundGuard['connectOptions']>['lookup'];
    try {
      // The scheme only picks a default port; this one is explicit.
      ({ lookup } = guard.connectOptions(target));
    } catch (error) {
      return answerRaw(client, 403, refusalText(session, error));
    }
    track(session, client);
    const upstream = connect({ host: target.hostname.replace(/^\[(.*)\]$/, '$1'), port, lookup });
    track(session, upstream);
    let isOpen = false;
    upstream.once('connect', () => {
      isOpen = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      splice(session, client, upstream);
    });
    upstream.on('error', (error) => {
      if (isOpen) return client.destroy();
      const failure = upstreamFailure(session, target.host, error);
      answerRaw(client, failure.status, failure.text);
    });
    client.once('close', () => upstream.destroy());
  });

  // A websocket over plain HTTP in absolute form (Chromium tunnels even ws:// through CONNECT,
  // other clients may not).
  server.on('upgrade', (request: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => client.destroy());
    const session = authenticate(request.headers);
    if (!session) {
      return answerRaw(client, 407, 'proxy credentials required', [`Proxy-Authenticate: ${REALM}`]);
    }
    const target = absoluteTarget(request.url);
    if (!target) return answerRaw(client, 400, 'only absolute http:// requests are proxied');
    const blocked = blockedBecause(session);
    if (blocked) return answerRaw(client, 403, blocked);
    track(session, client);
    const upstream = openUpstream(session, target, request, true, (text) =>
      answerRaw(client, 403, text),
    );
    if (!upstream) return;
    let hasAnswered = false;
    upstream.on('upgrade', (incoming, upstreamSocket, upstreamHead) => {
      hasAnswered = true;
      track(session, upstreamSocket);
      if (!account(session, rawHeadLength(incoming) + upstreamHead.length)) return;
      const lines = [`HTTP/1.1 ${incoming.statusCode} ${incoming.statusMessage}`];
      for (let index = 0; index + 1 < incoming.rawHeaders.length; index += 2) {
        lines.push(`${incoming.rawHeaders[index]}: ${incoming.rawHeaders[index + 1]}`);
      }
      client.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length > 0) client.write(upstreamHead);
      if (head.length > 0) upstreamSocket.write(head);
      splice(session, client, upstreamSocket);
    });
    // The server would not switch protocols: its answer, as is, and the connection ends.
    upstream.on('response', (incoming) => {
      hasAnswered = true;
      if (!account(session, rawHeadLength(incoming))) return;
      const lines = [`HTTP/1.1 ${incoming.statusCode} ${incoming.statusMessage}`];
      const headers = responseHeaders(incoming.headers);
      for (const [name, value] of Object.entries(headers)) {
        for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
      }
      lines.push('Connection: close');
      client.write(`${lines.join('\r\n')}\r\n\r\n`);
      pipeline(incoming, counter(session), client, () => client.destroy());
    });
    upstream.on('error', (error) => {
      if (hasAnswered) return client.destroy();
      const failure = upstreamFailure(session, target.host, error);
      answerRaw(client, failure.status, failure.text);
    });
    client.once('close', () => upstream.destroy());
    upstream.end();
  });

  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the proxy has no TCP address');
  const { port } = address;

  return {
    url: `http://127.0.0.1:${port}`,
    openSession({ maxBytes }) {
      // Random, so one context cannot guess another's credentials and use its budget.
      const username = `s${randomBytes(12).toString('hex')}`;
      const password = randomBytes(24).toString('base64url');
      const state: SessionState = {
        password: Buffer.from(password, 'utf8'),
        maxBytes,
        bytes: 0,
        isOverBudget: false,
        refused: [],
        live: new Set(),
      };
      sessions.set(username, state);
      return {
        username,
        password,
        bytesReceived: () => state.bytes,
        isOverLimit: () => state.isOverBudget,
        resetBytes() {
          state.bytes = 0;
          state.isOverBudget = false;
        },
        refusals: () => [...state.refused],
        close() {
          sessions.delete(username);
          cut(state);
        },
      };
    },
    async close() {
      for (const state of sessions.values()) cut(state);
      sessions.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
