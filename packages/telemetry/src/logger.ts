import { trace } from '@opentelemetry/api';
import { type DestinationStream, type LoggerOptions, type Logger as PinoLogger, pino } from 'pino';

export type Logger = PinoLogger;

// Never log these, wherever they appear in a logged object.
const REDACTED_PATHS = [
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'password',
  '*.password',
  'databaseUrl',
  '*.databaseUrl',
];

export function createLogger(
  service: string,
  level = 'info',
  destination?: DestinationStream,
): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
    // Loki joins logs to Tempo traces on trace_id.
    mixin() {
      const spanContext = trace.getActiveSpan()?.spanContext();
      if (!spanContext || !trace.isSpanContextValid(spanContext)) return {};
      return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
