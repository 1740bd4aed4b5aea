import { type ErrorCode, HTTP_STATUS_BY_CODE } from '@jarvis/contracts';

// An error that becomes an HTTP answer `{error: {code, message}}` as it is.
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, status = HTTP_STATUS_BY_CODE[code]) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.status = status;
  }
}
