import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GEN_AI_SCHEMA_URL } from './gen-ai';
import { createTraceExporter, type OtlpProtocol, startTelemetry, withSpan } from './tracing';

type Received = { path: string; headers: IncomingHttpHeaders; body: Buffer };

// A real HTTP endpoint: what the exporter sends is what a collector would get.
const received: Received[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
    res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
    res.end(req.headers['content-type'] === 'application/json' ? '{}' : '');
  });
});
let endpoint = '';

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function exportOneSpan(protocol: OtlpProtocol): Promise<Received> {
  received.length = 0;
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(createTraceExporter(endpoint, protocol))],
  });
  provider.getTracer('test').startSpan(`span over ${protocol}`).end();
  await provider.forceFlush();
  await provider.shutdown();
  expect(received).toHaveLength(1);
  return received[0] as Received;
}

describe('createTraceExporter', () => {
  it('sends protobuf to /v1/traces for http/protobuf', async () => {
    const request = await exportOneSpan('http/protobuf');
    expect(request.path).toBe('/v1/traces');
    expect(request.headers['content-type']).toBe('application/x-protobuf');
    // The span's name is in the binary body, but the body is no JSON.
    expect(request.body.includes('span over http/protobuf')).toBe(true);
    expect(() => JSON.parse(request.body.toString())).toThrow();
  });

  it('sends JSON to /v1/traces for http/json', async () => {
    const request = await exportOneSpan('http/json');
    expect(request.path).toBe('/v1/traces');
    expect(request.headers['content-type']).toBe('application/json');
    const body = JSON.parse(request.body.toString());
    expect(body.resourceSpans[0].scopeSpans[0].spans[0].name).toBe('span over http/json');
  });
});

describe('startTelemetry', () => {
  it("exports the service's spans under its name, with the pinned conventions' schema URL", async () => {
    received.length = 0;
    const telemetry = startTelemetry({
      serviceName: 'memory',
      otlpEndpoint: endpoint,
      otlpProtocol: 'http/json',
    });
    await withSpan('retrieval', { attributes: { 'gen_ai.operation.name': 'retrieval' } }, () =>
      Promise.resolve(),
    );
    // Shutting down flushes the batch.
    await telemetry.stop();
    expect(received.map((request) => request.path)).toEqual(['/v1/traces']);
    const [resourceSpans] = JSON.parse(received[0]?.body.toString() ?? '{}').resourceSpans;
    expect(resourceSpans.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'memory' },
    });
    expect(resourceSpans.scopeSpans[0]).toMatchObject({
      schemaUrl: GEN_AI_SCHEMA_URL,
      spans: [{ name: 'retrieval' }],
    });
    expect(GEN_AI_SCHEMA_URL).toBe('https://opentelemetry.io/schemas/1.37.0');
  });
});
