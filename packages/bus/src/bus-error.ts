import type { ErrorCode, ErrorInfo } from '@jarvis/contracts';

// The one error type that crosses the bus: its code and message reach the caller as they are.
export class BusError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'BusError';
    this.code = code;
  }

  toInfo(): ErrorInfo {
    return { code: this.code, message: this.message };
  }
}

export function isBusError(error: unknown): error is BusError {
  return error instanceof BusError;
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  // Postgres: the server is shutting down or restarting.
  '57P01',
  '57P02',
  '57P03',
]);
const CONNECTION_ERROR_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'connection is closed',
];

// A dependency (Postgres, Redis) could not be reached: the caller should hear "unavailable" and
// may retry, not "internal error".
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : undefined;
  if (code && CONNECTION_ERROR_CODES.has(code)) return true;
  if (error instanceof AggregateError && error.errors.some(isConnectionError)) return true;
  return CONNECTION_ERROR_MESSAGES.some((text) => error.message.includes(text));
}
