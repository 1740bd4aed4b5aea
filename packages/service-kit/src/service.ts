import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorBody } from '@jarvis/contracts';
import { jarvisTracer, type Logger, type Metrics } from '@jarvis/telemetry';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import express, { type NextFunction, type Request, type Response } from 'express';
import { Histogram } from 'prom-client';
import { HttpError } from './http-error';

// A readiness check: true while the dependency answers.
export type Check = () => Promise<boolean> | boolean;

export type ServiceOptions = {
  name: string;
  port: number;
  host?: string;
  logger: Logger;
  metrics: Metrics;
  checks: Record<string, Check>;
  dependencyLossExitMs: number;
  // Releases what the service holds (workers, bus, pools), in order. Runs once, on SIGTERM,
  // SIGINT, or when a dependency stays lost.
  onStop: () => Promise<void>;
  // How long requests under way may take to finish once stopping (default 5 s; compose gives a
  // service 30 s to stop). Those still open then are cut, so what onStop releases is released.
  drainMs?: number;
  // How the process ends after stopping; tests replace it.
  exit?: (code: number) => void;
};

export type Service = {
  app: express.Express;
  start(): Promise<{ port: number }>;
  stop(exitCode?: number): Promise<void>;
  // Aborted as the service begins to stop. Responses that stay open (event streams) end on it;
  // closing the server waits for every response under way.
  stopping: AbortSignal;
};

// How often the watchdog looks at the dependencies: each look wakes an idle process and makes a
// Postgres round trip, which once a second made a large part of an idle service's CPU. Half the
// allowed loss when that is shorter: a service exits between dependencyLossExitMs and that plus
// two looks after the loss (30-60 s with the default 30 s), and a restart comes soon enough for a
// process that cannot reconnect on its own.
const WATCHDOG_INTERVAL_MS = 15_000;
const DRAIN_MS = 5_000;
const SHUTDOWN_TIMEOUT_MS = 15_000;

export function createService(options: ServiceOptions): Service {
  const { logger } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  app.use(traceRequests(options));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', service: options.name });
  });
  app.get('/readyz', async (_req, res) => {
    const checks = await runChecks(options.checks);
    const isReady = Object.values(checks).every(Boolean);
    res.status(isReady ? 200 : 503).json({ status: isReady ? 'ready' : 'unavailable', checks });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(options.metrics.registry.contentType).send(await options.metrics.registry.metrics());
  });

  let server: Server | undefined;
  let watchdog: NodeJS.Timeout | undefined;
  let stopping: Promise<void> | undefined;
  const stopSignal = new AbortController();

  async function stop(exitCode = 0): Promise<void> {
    stopping ??= (async () => {
      logger.info({ exitCode }, 'stopping');
      clearInterval(watchdog);
      const forceExit = setTimeout(() => {
        logger.error('shutdown took too long; exiting');
        exit(exitCode || 1);
      }, SHUTDOWN_TIMEOUT_MS);
      forceExit.unref();
      // Open event streams end; then stop taking HTTP requests, so nothing new starts while
      // resources close. Idle keep-alive connections would otherwise hold the close open until
      // they time out, and requests still under way after draining are cut.
      stopSignal.abort();
      const closed = new Promise<void>((resolve) =>
        server ? server.close(() => resolve()) : resolve(),
      );
      server?.closeIdleConnections();
      const drain = setTimeout(() => {
        logger.warn('requests still open after draining; closing their connections');
        server?.closeAllConnections();
      }, options.drainMs ?? DRAIN_MS);
      await closed;
      clearTimeout(drain);
      try {
        await options.onStop();
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
      }
      logger.info('stopped');
      exit(exitCode);
    })();
    return stopping;
  }

  async function start(): Promise<{ port: number }> {
    app.use((req, _res, next) => {
      next(new HttpError('not_found', `no route for ${req.method} ${req.path}`));
    });
    app.use(answerErrors(logger));
    server = await new Promise<Server>((resolve, reject) => {
      const listening = app.listen(options.port, options.host ?? '0.0.0.0', (error) => {
        if (error) reject(error);
        else resolve(listening);
      });
    });
    answerClientErrors(server);
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : options.port;
    watchdog = watchDependencies(options, () => void stop(1));
    process.once('SIGTERM', () => void stop(0));
    process.once('SIGINT', () => void stop(0));
    // Launchers that pass port 0 learn the port the OS picked from this line, so it is written
    // at every level but silent.
    const announcer = logger.level === 'silent' ? logger : logger.child({}, { level: 'info' });
    announcer.info({ port }, 'listening');
    return { port };
  }

  return { app, start, stop, stopping: stopSignal.signal };
}

async function runChecks(checks: Record<string, Check>): Promise<Record<string, boolean>> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        return [name, await check()] as const;
      } catch {
        return [name, false] as const;
      }
    }),
  );
  return Object.fromEntries(entries);
}

// Exits (through onLost) when a dependency has been failing for longer than allowed, so the
// container's restart policy replaces a process that cannot recover on its own.
function watchDependencies(options: ServiceOptions, onLost: () => void): NodeJS.Timeout {
  const failingSince = new Map<string, number>();
  const intervalMs = Math.min(WATCHDOG_INTERVAL_MS, options.dependencyLossExitMs / 2);
  const timer = setInterval(async () => {
    const checks = await runChecks(options.checks);
    const now = Date.now();
    for (const [name, isOk] of Object.entries(checks)) {
      if (isOk) {
        if (failingSince.delete(name)) options.logger.info({ dependency: name }, 'dependency back');
        continue;
      }
      const since = failingSince.get(name);
      if (since === undefined) {
        failingSince.set(name, now);
        options.logger.warn({ dependency: name }, 'dependency lost');
      } else if (now - since > options.dependencyLossExitMs) {
        options.logger.fatal({ dependency: name }, 'dependency lost for too long; exiting');
        onLost();
      }
    }
  }, intervalMs);
  timer.unref();
  return timer;
}

function traceRequests(options: ServiceOptions) {
  const duration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['method', 'route', 'status'],
    registers: [options.metrics.registry],
  });
  return (req: Request, res: Response, next: NextFunction) => {
    const requestId = randomUUID();
    res.setHeader('x-request-id', requestId);
    const parent = propagation.extract(context.active(), req.headers);
    const span = jarvisTracer().startSpan(`${req.method}`, { kind: SpanKind.SERVER }, parent);
    // The trace to look up in Tempo (and in the logs) for everything this request caused.
    res.setHeader('x-trace-id', span.spanContext().traceId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const route = typeof req.route?.path === 'string' ? req.route.path : 'unmatched';
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.response.status_code', res.statusCode);
      span.end();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      duration.observe({ method: req.method, route, status: String(res.statusCode) }, seconds);
    });
    context.with(trace.setSpan(parent, span), next);
  };
}

// What express and its body parsers throw for a bad request: a status, and from the parsers a
// type. The router's URIError for a path parameter that is not valid percent-encoding ('%',
// '%E0%A4%A') has the status alone, and without this would answer 500.
type ClientError = { type?: unknown; status: number; message: string };

function isClientError(error: unknown): error is ClientError {
  return (
    error instanceof Error &&
    'status' in error &&
    typeof error.status === 'number' &&
    error.status >= 400 &&
    error.status < 500
  );
}

function answerErrors(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { status, body } = describeError(error);
    if (status >= 500) logger.error({ err: error, path: req.path }, 'request failed');
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(status).json(body);
  };
}

// The statuses Node itself answers these with.
const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'request headers are too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'chunk extensions are too large'],
};

// Requests Node refuses before express sees them (headers over its 16 KB, a malformed request
// line) get the same JSON error as every other refusal, instead of a bare status line.
function answerClientErrors(server: Server): void {
  // Connections with a response under way: an answer written into one would corrupt it.
  const answering = new WeakSet<Duplex>();
  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    answering.add(request.socket);
    response.once('close', () => answering.delete(request.socket));
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A connection that timed out is closed without an answer: it may be one a browser opened
    // ahead of need (or kept alive) and has sent nothing on, and the browser would read a 408 as
    // the answer to the next request it sends there (a browser's chat did).
    const isTimeout = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (error.code === 'ECONNRESET' || !socket.writable || answering.has(socket) || isTimeout) {
      socket.destroy();
      return;
    }
    const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'malformed HTTP request'];
    const body: ErrorBody = { error: { code: 'bad_request', message } };
    const text = JSON.stringify(body);
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(text)}`,
      'Connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${text}`);
  });
}

function describeError(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof HttpError) {
    return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  }
  if (isClientError(error)) {
    if (error.type === 'entity.too.large') {
      return {
        status: 413,
        body: { error: { code: 'payload_too_large', message: 'request body is too large' } },
      };
    }
    if (error.type === 'entity.parse.failed') {
      return {
        status: 400,
        body: { error: { code: 'bad_request', message: 'request body is not valid JSON' } },
      };
    }
    return {
      status: error.status,
      body: { error: { code: 'bad_request', message: error.message } },
    };
  }
  return { status: 500, body: { error: { code: 'internal', message: 'internal error' } } };
}
