import type { z } from 'zod';

// A request/reply subject and the schemas both sides validate against. The subject is relative:
// the bus prefixes it with its namespace so several installs (or test runs) can share one NATS.
export type RpcContract<Req extends z.ZodType, Res extends z.ZodType> = {
  subject: string;
  request: Req;
  response: Res;
};

export function defineRpc<Req extends z.ZodType, Res extends z.ZodType>(
  subject: string,
  request: Req,
  response: Res,
): RpcContract<Req, Res> {
  return { subject, request, response };
}

// A one-way message: a JetStream subject or a core NATS event.
export type EventContract<Payload extends z.ZodType> = {
  subject: string;
  payload: Payload;
};

export function defineEvent<Payload extends z.ZodType>(
  subject: string,
  payload: Payload,
): EventContract<Payload> {
  return { subject, payload };
}
