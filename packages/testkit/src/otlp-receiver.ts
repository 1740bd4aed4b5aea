import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

// An in-process stand-in for an OpenTelemetry collector: it takes what services export over
// OTLP/HTTP in JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) and keeps the spans, each with its
// resource's service.name, so a test or bench reads exactly what a trace backend would get.
// Protobuf is answered 415: decoding it here would need the OTLP schema, and JSON carries the
// same spans.
//
//   const receiver = await startOtlpReceiver();
//   // services run with OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, ..._PROTOCOL=http/json
//   const trace = await receiver.waitForSpans((spans) => spans.some(...));
//   console.log(spanTree(trace));
//   await receiver.close();

export type SpanAttribute = string | number | boolean | SpanAttribute[] | null;

export type ReceivedSpan = {
  traceId: string;
  spanId: string;
  // Undefined for a trace's root span.
  parentSpanId: string | undefined;
  name: string;
  // The resource's service.name: which service made the span.
  service: string;
  // OTLP's SpanKind numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
  kind: number;
  attributes: Record<string, SpanAttribute>;
  // 0 unset, 1 ok, 2 error.
  statusCode: number;
  links: { traceId: string; spanId: string }[];
  // The instrumentation scope's schema URL (which semantic conventions its names follow).
  schemaUrl: string | undefined;
  startMs: number;
  durationMs: number;
};

export type OtlpReceiver = {
  // The base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces).
  url: string;
  // Every span received so far, in arrival order.
  spans(): ReceivedSpan[];
  // Bytes of the export requests received so far (what tracing costs on the wire).
  receivedBytes(): number;
  // Resolves with the spans received once `isComplete` holds for them (polls; exporters batch,
  // so spans arrive a few seconds after they end).
  waitForSpans(
    isComplete: (spans: ReceivedSpan[]) => boolean,
    options?: { timeoutMs?: number },
  ): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
};

// OTLP's JSON encoding of an attribute value (AnyValue): one of these fields is set.
type AnyValue = {
  stringValue?: string | undefined;
  boolValue?: boolean | undefined;
  intValue?: string | number | undefined;
  doubleValue?: number | undefined;
  arrayValue?: { values?: AnyValue[] | undefined } | undefined;
};
const AnyValue: z.ZodType<AnyValue> = z.lazy(() =>
  z.object({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.string(), z.number()]).optional(),
    doubleValue: z.number().optional(),
    arrayValue: z.object({ values: z.array(AnyValue).optional() }).optional(),
  }),
);
const KeyValues = z.array(z.object({ key: z.string(), value: AnyValue })).default([]);
// Times are 64-bit nanoseconds: a decimal string in OTLP JSON (a number from some encoders).
const Nanos = z.union([z.string(), z.number()]).transform((value) => BigInt(value));

const ExportTraceServiceRequest = z.object({
  resourceSpans: z
    .array(
      z.object({
        resource: z.object({ attributes: KeyValues }).default({ attributes: [] }),
        scopeSpans: z
          .array(
            z.object({
              schemaUrl: z.string().optional(),
              spans: z
                .array(
                  z.object({
                    traceId: z.string(),
                    spanId: z.string(),
                    parentSpanId: z.string().optional(),
                    name: z.string(),
                    kind: z.number().int().default(0),
                    startTimeUnixNano: Nanos,
                    endTimeUnixNano: Nanos,
                    attributes: KeyValues,
                    status: z.object({ code: z.number().int().default(0) }).default({ code: 0 }),
                    links: z
                      .array(z.object({ traceId: z.string(), spanId: z.string() }))
                      .default([]),
                  }),
                )
                .default([]),
            }),
          )
          .default([]),
      }),
    )
    .default([]),
});

function attributeValue(value: AnyValue): SpanAttribute {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(attributeValue);
  return null;
}

function attributesOf(list: z.output<typeof KeyValues>): Record<string, SpanAttribute> {
  return Object.fromEntries(list.map(({ key, value }) => [key, attributeValue(value)]));
}

function spansOf(body: z.output<typeof ExportTraceServiceRequest>): ReceivedSpan[] {
  return body.resourceSpans.flatMap((resourceSpans) => {
    const service = attributesOf(resourceSpans.resource.attributes)['service.name'];
    return resourceSpans.scopeSpans.flatMap((scope) =>
      scope.spans.map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId || undefined,
        name: span.name,
        service: typeof service === 'string' ? service : 'unknown',
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        statusCode: span.status.code,
        links: span.links.map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
        schemaUrl: scope.schemaUrl || undefined,
        startMs: Number(span.startTimeUnixNano / 1_000_000n),
        durationMs: Number(span.endTimeUnixNano - span.startTimeUnixNano) / 1e6,
      })),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  let bytes = 0;
  // Why exports were turned away, so a test that waits in vain says so.
  const refusals: string[] = [];
  const server = createServer((request, response) => {
    const answer = (status: number, body: { error?: string }) => {
      if (body.error) refusals.push(`${status} ${body.error}`);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || request.url !== '/v1/traces') {
      request.resume();
      answer(404, { error: 'only POST /v1/traces is received here' });
      return;
    }
    if (!request.headers['content-type']?.startsWith('application/json')) {
      request.resume();
      answer(415, { error: 'send OTLP in JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)' });
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      bytes += body.length;
      let parsed: z.output<typeof ExportTraceServiceRequest>;
      try {
        parsed = ExportTraceServiceRequest.parse(JSON.parse(body.toString('utf8')));
      } catch (error) {
        answer(400, { error: error instanceof Error ? error.message : 'malformed export' });
        return;
      }
      received.push(...spansOf(parsed));
      // An ExportTraceServiceResponse with nothing rejected.
      answer(200, {});
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    receivedBytes: () => bytes,
    async waitForSpans(isComplete, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 20_000);
      for (;;) {
        const spans = [...received];
        if (isComplete(spans)) return spans;
        if (Date.now() > deadline) {
          const refused =
            refusals.length > 0 ? `\nrefused: ${refusals.slice(0, 5).join('; ')}` : '';
          throw new Error(`the spans received are not complete:\n${spanTree(spans)}${refused}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

// The spans as an indented tree, one line each: name [service], children under their parent in
// start order. A span whose parent was not received is shown at the top, marked "parent missing".
export function spanTree(spans: ReceivedSpan[]): string {
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string | undefined, ReceivedSpan[]>();
  for (const span of [...spans].sort((a, b) => a.startMs - b.startMs)) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const span of children.get(parent) ?? []) {
      const orphan = depth === 0 && span.parentSpanId ? ' (parent missing)' : '';
      lines.push(`${'  '.repeat(depth)}${span.name} [${span.service}]${orphan}`);
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
