import { once } from 'node:events';
import { connect } from 'node:net';
import { ErrorBody } from '@jarvis/contracts';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError } from './http-error';
import { createService, type ServiceOptions } from './service';

type Started = { url: string; exits: number[]; stopped: string[]; stop(): Promise<void> };

const running: Started[] = [];

async function startService(
  overrides: Partial<ServiceOptions> = {},
  addRoutes: (app: express.Express, stopping: AbortSignal) => void = () => {},
): Promise<Started> {
  const exits: number[] = [];
  const stopped: string[] = [];
  const service = createService({
    name: 'kit-test',
    port: 0,
    host: '127.0.0.1',
    logger: createLogger('kit-test', 'silent'),
    metrics: createMetrics('kit-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {
      stopped.push('resources');
    },
    exit: (code) => exits.push(code),
    ...overrides,
  });
  addRoutes(service.app, service.stopping);
  const { port } = await service.start();
  const started = { url: `http://127.0.0.1:${port}`, exits, stopped, stop: () => service.stop() };
  running.push(started);
  return started;
}

// Writes each request on one connection after the answer to the one before has begun, and returns
// everything the server sent until it closed the connection.
async function exchange(url: string, requests: string[]): Promise<string> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  let received = '';
  const pending = [...requests];
  socket.write(pending.shift() ?? '');
  socket.on('data', (chunk) => {
    received += chunk.toString();
    const next = pending.shift();
    if (next) socket.write(next);
  });
  await once(socket, 'close');
  return received;
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((service) => service.stop()));
});

describe('createService', () => {
  it('serves liveness, readiness from its checks, and Prometheus metrics', async () => {
    let isNatsUp = true;
    const { url } = await startService({
      checks: { nats: () => isNatsUp, postgres: async () => true },
    });
    const live = await fetch(`${url}/healthz`);
    expect(live.status).toBe(200);
    expect(live.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(live.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/);

    expect(await (await fetch(`${url}/readyz`)).json()).toEqual({
      status: 'ready',
      checks: { nats: true, postgres: true },
    });
    isNatsUp = false;
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({
      status: 'unavailable',
      checks: { nats: false, postgres: true },
    });

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('process_resident_memory_bytes{service="kit-test"}');
    expect(metrics).toContain('http_server_request_duration_seconds_count');
  });

  it('logs the port it listens on even when its level is above info', async () => {
    const lines: string[] = [];
    const destination = { write: (line: string) => void lines.push(line) };
    const { url } = await startService({ logger: createLogger('kit-test', 'warn', destination) });
    const listening = lines
      .map((line) => JSON.parse(line))
      .find((line) => line.msg === 'listening');
    expect(listening?.port).toBe(Number(new URL(url).port));
    expect(listening?.port).toBeGreaterThan(0);
  });

  it('answers every error as JSON with its status', async () => {
    const { url } = await startService({}, (app) => {
      app.post('/echo', express.json({ limit: 64 }), (req, res) => {
        res.json(req.body);
      });
      app.get('/typed', () => {
        throw new HttpError('conflict', 'already there');
      });
      app.get('/crash', () => {
        throw new Error('secret internals');
      });
    });
    const post = (body: string) =>
      fetch(`${url}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });

    const malformed = await post('{"a":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({
      error: { code: 'bad_request', message: 'request body is not valid JSON' },
    });
    const large = await post(JSON.stringify({ text: 'x'.repeat(200) }));
    expect(large.status).toBe(413);
    expect(ErrorBody.parse(await large.json()).error.code).toBe('payload_too_large');

    const typed = await fetch(`${url}/typed`);
    expect(typed.status).toBe(409);
    expect(await typed.json()).toEqual({ error: { code: 'conflict', message: 'already there' } });

    const crash = await fetch(`${url}/crash`);
    expect(crash.status).toBe(500);
    expect(await crash.json()).toEqual({ error: { code: 'internal', message: 'internal error' } });

    const missing = await fetch(`${url}/nowhere`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      error: { code: 'not_found', message: 'no route for GET /nowhere' },
    });
  });

  it('answers a bad escape in the path and oversized headers as JSON too', async () => {
    const { url } = await startService({}, (app) => {
      app.get('/things/:id', (req, res) => {
        res.json({ id: req.params.id });
      });
    });

    const badEscape = await fetch(`${url}/things/%E0%A4%A`);
    expect(badEscape.status).toBe(400);
    expect(await badEscape.json()).toEqual({
      error: { code: 'bad_request', message: "Failed to decode param '%E0%A4%A'" },
    });

    // On one kept-alive connection: a request answered, then one with headers over Node's limit.
    const answers = await exchange(url, [
      'GET /things/1 HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET /things/2 HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`,
    ]);
    expect(answers).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*"id":"1"[\s\S]*HTTP\/1\.1 431 /);
    expect(
      answers.endsWith(
        JSON.stringify({
          error: { code: 'bad_request', message: 'request headers are too large' },
        }),
      ),
    ).toBe(true);
    expect((await fetch(`${url}/things/1`)).status).toBe(200);
  });

  it('exits non-zero once a dependency has been lost for too long', async () => {
    const service = await startService({
      checks: { redis: () => false },
      dependencyLossExitMs: 300,
    });
    const deadline = Date.now() + 5_000;
    while (service.exits.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(service.exits).toEqual([1]);
    expect(service.stopped).toEqual(['resources']);
  });

  it('stops once, releasing resources, however often stop is called', async () => {
    const service = await startService();
    await Promise.all([service.stop(), service.stop()]);
    expect(service.stopped).toEqual(['resources']);
    expect(service.exits).toEqual([0]);
  });

  it('ends the responses that stay open as it stops, and stops cleanly', async () => {
    const service = await startService({}, (app, stopping) => {
      app.get('/stream', (_req, res) => {
        res.write('event: hello\n\n');
        stopping.addEventListener('abort', () => res.end('event: bye\n\n'));
      });
    });
    const response = await fetch(`${service.url}/stream`);
    const body = response.text();
    await service.stop();
    expect(await body).toBe('event: hello\n\nevent: bye\n\n');
    expect(service.stopped).toEqual(['resources']);
    expect(service.exits).toEqual([0]);
  });

  it('cuts requests still open after draining, and still releases everything', async () => {
    let arrived: () => void = () => {};
    const hasArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const service = await startService({ drainMs: 100 }, (app) => {
      app.get('/hang', () => arrived());
    });
    const hanging = fetch(`${service.url}/hang`).then(
      () => 'answered',
      () => 'cut',
    );
    await hasArrived;
    await service.stop();
    expect(await hanging).toBe('cut');
    expect(service.stopped).toEqual(['resources']);
    expect(service.exits).toEqual([0]);
  });
});
