import { z } from 'zod';

// Typed errors travel between services as replies; the gateway maps each code to an HTTP status.
export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'idempotency_key_reused',
  'payload_too_large',
  'unavailable',
  'timeout',
  'budget_exceeded',
  'rate_limited',
  'cancelled',
  'internal',
] as const;

export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorInfo = z.object({
  code: ErrorCode,
  message: z.string(),
});
export type ErrorInfo = z.infer<typeof ErrorInfo>;

export const HTTP_STATUS_BY_CODE: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  // An Idempotency-Key sent again with another body: retrying the same request is safe, but
  // this one is not that request, so nothing of it is stored.
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unavailable: 503,
  timeout: 504,
  budget_exceeded: 429,
  // Too many requests in a short time; Retry-After says when to try again.
  rate_limited: 429,
  // nginx's 'client closed request': the caller itself stopped the work.
  cancelled: 499,
  internal: 500,
};
