import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OtlpReceiver, spanTree, startOtlpReceiver } from './otlp-receiver';

const TRACE = '5b8efff798038103d269b633813fc60c';

// An export as OTLP/HTTP JSON spells it (hex ids, 64-bit integers as strings).
function exportOf(service: string, spans: object[]) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [{ schemaUrl: 'https://opentelemetry.io/schemas/1.37.0', spans }],
      },
    ],
  };
}

function span(name: string, spanId: string, parentSpanId: string, startMs: number) {
  return {
    traceId: TRACE,
    spanId,
    parentSpanId,
    name,
    kind: 1,
    startTimeUnixNano: String(BigInt(startMs) * 1_000_000n),
    endTimeUnixNano: String(BigInt(startMs + 5) * 1_000_000n),
    attributes: [
      { key: 'gen_ai.usage.input_tokens', value: { intValue: '12' } },
      {
        key: 'gen_ai.response.finish_reasons',
        value: { arrayValue: { values: [{ stringValue: 'stop' }] } },
      },
      { key: 'jarvis.usage.cost_usd', value: { doubleValue: 0.25 } },
    ],
    status: { code: 2 },
  };
}

describe('the OTLP receiver', () => {
  let receiver: OtlpReceiver;
  const post = (body: string, contentType = 'application/json') =>
    fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(() => receiver.close());

  it('keeps the spans of a JSON export with their service and attributes', async () => {
    const root = span('POST /chat', 'aaaaaaaaaaaaaaaa', '', 1_000);
    const child = span('chat m', 'bbbbbbbbbbbbbbbb', 'aaaaaaaaaaaaaaaa', 1_001);
    const body = JSON.stringify(exportOf('model-gateway', [root, child]));
    expect((await post(body)).status).toBe(200);

    const spans = await receiver.waitForSpans((all) => all.length === 2);
    expect(spans[1]).toMatchObject({
      traceId: TRACE,
      spanId: 'bbbbbbbbbbbbbbbb',
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      name: 'chat m',
      service: 'model-gateway',
      statusCode: 2,
      schemaUrl: 'https://opentelemetry.io/schemas/1.37.0',
      startMs: 1_001,
      durationMs: 5,
      attributes: {
        'gen_ai.usage.input_tokens': 12,
        'gen_ai.response.finish_reasons': ['stop'],
        'jarvis.usage.cost_usd': 0.25,
      },
    });
    expect(spans[0]?.parentSpanId).toBeUndefined();
    expect(receiver.receivedBytes()).toBe(Buffer.byteLength(body));
    expect(spanTree(spans)).toBe('POST /chat [model-gateway]\n  chat m [model-gateway]');
  });

  it('shows a span whose parent never came at the top, marked', () => {
    const [, child] = receiver.spans();
    if (!child) throw new Error('the first test keeps two spans');
    const orphan = { ...child, parentSpanId: 'cccccccccccccccc' };
    expect(spanTree([orphan])).toBe('chat m [model-gateway] (parent missing)');
  });

  it('refuses protobuf with 415 and a malformed export with 400, and says so on timeout', async () => {
    expect((await post('\n\0', 'application/x-protobuf')).status).toBe(415);
    expect((await post('{"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}')).status).toBe(400);
    await expect(receiver.waitForSpans(() => false, { timeoutMs: 200 })).rejects.toThrow(
      /refused: 415 send OTLP in JSON/,
    );
  });
});
