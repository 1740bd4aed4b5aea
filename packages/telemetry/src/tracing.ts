import {
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  BatchSpanProcessor,
  NoopSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { GEN_AI_SCHEMA_URL } from './gen-ai';

export { SpanKind, SpanStatusCode };
export type { Span, SpanContext };

// The OTLP/HTTP encodings the OTel spec names (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is left out, as
// every collector Jarvis is run with takes HTTP.
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export type TelemetryOptions = {
  serviceName: string;
  // Traces are exported over OTLP/HTTP only when this is set; without it spans still get ids, so
  // logs carry trace_id and the trace context still crosses NATS.
  otlpEndpoint?: string | undefined;
  // http/protobuf unless told otherwise: the spec's default, and the smaller body.
  otlpProtocol?: OtlpProtocol | undefined;
};

// The exporter for the endpoint's /v1/traces in the protocol asked for.
export function createTraceExporter(endpoint: string, protocol: OtlpProtocol): SpanExporter {
  const url = `${endpoint.replace(/\/$/, '')}/v1/traces`;
  return protocol === 'http/json'
    ? new JsonTraceExporter({ url })
    : new ProtobufTraceExporter({ url });
}

export type Telemetry = { stop(): Promise<void> };

export function startTelemetry(options: TelemetryOptions): Telemetry {
  // Without an exporter a no-op processor still makes the SDK install its tracer provider (an
  // empty list does not), so spans get real ids for logs and propagation.
  const spanProcessors = options.otlpEndpoint
    ? [
        new BatchSpanProcessor(
          createTraceExporter(options.otlpEndpoint, options.otlpProtocol ?? 'http/protobuf'),
        ),
      ]
    : [new NoopSpanProcessor()];
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName }),
    spanProcessors,
    // Traces only. Left unset, these two make the SDK set up OTLP metric and log exporters from
    // the environment (and a metric reader's timer every minute): metrics are Prometheus's to
    // scrape (/metrics), and logs go to stdout, where the collector reads them.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  return { stop: () => sdk.shutdown() };
}

// Every span Jarvis makes comes from this tracer, which names the conventions its spans follow.
export const jarvisTracer = () =>
  trace.getTracerProvider().getTracer('jarvis', undefined, { schemaUrl: GEN_AI_SCHEMA_URL });

export type SpanOptions = {
  kind?: SpanKind;
  // The span's parent: the active context when unset; ROOT_CONTEXT (isRoot) starts a new trace.
  parent?: Context;
  isRoot?: boolean;
  attributes?: Record<string, string | number | boolean | string[]>;
  // Other spans this one relates to without being their child (a mission task to its mission).
  links?: Link[];
};

// Runs fn inside a new active span and ends it, recording a thrown error on the span.
export async function withSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.isRoot ? ROOT_CONTEXT : (options.parent ?? context.active());
  return jarvisTracer().startActiveSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      attributes: options.attributes ?? {},
      links: options.links ?? [],
      root: options.isRoot === true,
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export type Carrier = Record<string, string>;

// W3C trace context (traceparent, tracestate) of the active span, for message headers.
export function injectTraceContext(): Carrier {
  const carrier: Carrier = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function extractTraceContext(carrier: Carrier): Context {
  return propagation.extract(context.active(), carrier);
}

export function activeTraceId(): string | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
}

// The active span's ids, for a record that later spans link to (a mission to its tasks).
export function activeSpanContext(): SpanContext | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}

// A link to a span known only by its stored ids; none when they are missing or malformed.
export function linkTo(traceId: string | null, spanId: string | null): Link[] {
  if (!traceId || !spanId) return [];
  const spanContext = { traceId, spanId, traceFlags: 1 };
  return trace.isSpanContextValid(spanContext) ? [{ context: spanContext }] : [];
}
