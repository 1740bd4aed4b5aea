import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, NoopSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export { SpanKind };

export type TelemetryOptions = {
  serviceName: string;
  // Traces are exported over OTLP/HTTP only when this is set; without it spans still get ids, so
  // logs carry trace_id and the trace context still crosses NATS.
  otlpEndpoint?: string | undefined;
};

export type Telemetry = { stop(): Promise<void> };

export function startTelemetry(options: TelemetryOptions): Telemetry {
  // Without an exporter a no-op processor still makes the SDK install its tracer provider (an
  // empty list does not), so spans get real ids for logs and propagation.
  const spanProcessors = options.otlpEndpoint
    ? [
        new BatchSpanProcessor(
          new OTLPTraceExporter({ url: `${options.otlpEndpoint.replace(/\/$/, '')}/v1/traces` }),
        ),
      ]
    : [new NoopSpanProcessor()];
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: options.serviceName }),
    spanProcessors,
    instrumentations: [],
  });
  sdk.start();
  return { stop: () => sdk.shutdown() };
}

const tracer = () => trace.getTracer('jarvis');

export type SpanOptions = {
  kind?: SpanKind;
  parent?: Context;
  attributes?: Record<string, string | number | boolean>;
};

// Runs fn inside a new active span and ends it, recording a thrown error on the span.
export async function withSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes ?? {} },
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
