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
