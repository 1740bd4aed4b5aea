import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BusError } from './bus-error';
import {
  carrierFrom,
  decodeJson,
  describeZodError,
  encodeJson,
  headersFrom,
  parseOrThrow,
  ReplyEnvelope,
} from './codec';

describe('decodeJson', () => {
  it('round-trips what encodeJson wrote', () => {
    const value = { text: 'héllo', n: [1, 2], nested: { ok: true } };
    expect(decodeJson(encodeJson(value))).toEqual(value);
  });

  it('reads an empty body as undefined, so the schema reports it', () => {
    expect(decodeJson(new Uint8Array())).toBeUndefined();
  });

  it('turns bytes that are not JSON into a bad_request BusError', () => {
    const bytes = new TextEncoder().encode('{not json');
    expect(() => decodeJson(bytes)).toThrowError(BusError);
    expect(() => decodeJson(bytes)).toThrowError('message body is not valid JSON');
  });
});

describe('describeZodError', () => {
  const Schema = z.object({ user: z.object({ name: z.string() }), tags: z.array(z.string()) });

  it('names the path of the first problem', () => {
    const result = Schema.safeParse({ user: { name: 7 }, tags: [] });
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(describeZodError(result.error)).toMatch(/^user\.name: /);
  });

  it('says (root) when the value itself is wrong', () => {
    const result = Schema.safeParse('nope');
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(describeZodError(result.error)).toMatch(/^\(root\): /);
  });
});

describe('parseOrThrow', () => {
  it('returns the parsed output (defaults applied)', () => {
    const Schema = z.object({ limit: z.number().default(10) });
    expect(parseOrThrow(Schema, {})).toEqual({ limit: 10 });
  });

  it('throws BusError bad_request naming the field', () => {
    const Schema = z.object({ limit: z.number() });
    let caught: unknown;
    try {
      parseOrThrow(Schema, { limit: 'ten' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BusError);
    expect(caught).toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^limit: /),
    });
  });
});

describe('headers', () => {
  it('sends no headers for an empty carrier', () => {
    expect(headersFrom({})).toBeUndefined();
  });

  it('carries trace context through NATS headers and back', () => {
    const carrier = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    expect(carrierFrom(headersFrom(carrier))).toEqual(carrier);
  });

  it('reads no headers as an empty carrier', () => {
    expect(carrierFrom(undefined)).toEqual({});
  });
});

describe('ReplyEnvelope', () => {
  it('accepts only known error codes', () => {
    expect(
      ReplyEnvelope.safeParse({ ok: false, error: { code: 'nope', message: 'x' } }).success,
    ).toBe(false);
    expect(
      ReplyEnvelope.safeParse({ ok: false, error: { code: 'not_found', message: 'x' } }).success,
    ).toBe(true);
  });
});
