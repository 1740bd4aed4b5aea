import { ErrorInfo } from '@jarvis/contracts';
import { headers as createHeaders, type MsgHdrs } from 'nats';
import { z } from 'zod';
import { BusError } from './bus-error';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeJson(data: Uint8Array): unknown {
  if (data.length === 0) return undefined;
  try {
    return JSON.parse(decoder.decode(data));
  } catch {
    throw new BusError('bad_request', 'message body is not valid JSON');
  }
}

// Every reply is an envelope, so a typed error is told apart from data without guessing.
export const ReplyEnvelope = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), data: z.unknown() }),
  z.object({ ok: z.literal(false), error: ErrorInfo }),
]);

// First problem only, with its path: enough to fix the request, short enough for a log line.
export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid input';
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  return `${path}: ${issue.message}`;
}

export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = z.safeParse(schema, value);
  if (!result.success) throw new BusError('bad_request', describeZodError(result.error));
  return result.data;
}

export function headersFrom(carrier: Record<string, string>): MsgHdrs | undefined {
  const entries = Object.entries(carrier);
  if (entries.length === 0) return undefined;
  const hdrs = createHeaders();
  for (const [key, value] of entries) hdrs.set(key, value);
  return hdrs;
}

export function carrierFrom(hdrs: MsgHdrs | undefined): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (!hdrs) return carrier;
  for (const key of hdrs.keys()) carrier[key.toLowerCase()] = hdrs.get(key);
  return carrier;
}
