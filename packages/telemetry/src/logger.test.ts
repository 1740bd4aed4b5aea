import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger';
import {
  activeTraceId,
  extractTraceContext,
  injectTraceContext,
  startTelemetry,
  withSpan,
} from './tracing';

function captureLines(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
  };
}

describe('telemetry', () => {
  const telemetry = startTelemetry({ serviceName: 'telemetry-test' });

  it('stamps log lines inside a span with its trace id, and redacts secrets', async () => {
    const capture = captureLines();
    const logger = createLogger('svc', 'info', capture.stream);
    let traceId: string | undefined;
    await withSpan('work', {}, async () => {
      traceId = activeTraceId();
      logger.info({ apiKey: 'jv_secret', nested: { authorization: 'Bearer x' } }, 'inside');
    });
    logger.info('outside');
    const [inside, outside] = capture.lines();
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(inside).toMatchObject({
      service: 'svc',
      level: 'info',
      msg: 'inside',
      trace_id: traceId,
      apiKey: '[redacted]',
      nested: { authorization: '[redacted]' },
    });
    expect(outside?.trace_id).toBeUndefined();
  });

  it('carries the trace across a header carrier', async () => {
    let carrier: Record<string, string> = {};
    let callerTrace: string | undefined;
    await withSpan('caller', {}, async () => {
      callerTrace = activeTraceId();
      carrier = injectTraceContext();
    });
    expect(carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    let calleeTrace: string | undefined;
    await withSpan('callee', { parent: extractTraceContext(carrier) }, async () => {
      calleeTrace = activeTraceId();
    });
    expect(calleeTrace).toBe(callerTrace);
  });

  it('records a thrown error and rethrows it', async () => {
    await expect(
      withSpan('failing', {}, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await telemetry.stop();
  });
});
