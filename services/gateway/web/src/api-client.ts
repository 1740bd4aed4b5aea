import type { ErrorBody } from '@jarvis/contracts';

// An error the gateway answered (`{error: {code, message}}`), or the network failing.
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

export type ApiClient = {
  get<T>(path: string): Promise<T>;
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T>;
  // The raw response (after the status check), for streams.
  open(path: string, init: RequestInit): Promise<Response>;
  // A file upload, with the share of the body sent so far (0 to 1): a multipart POST, or a
  // file's own bytes as the body of a PUT.
  upload<T>(path: string, body: FormData | Blob, options?: UploadOptions): Promise<T>;
};

type UploadOptions = {
  method?: 'POST' | 'PUT';
  // A raw body's type; a form sets its own (multipart, with its boundary).
  contentType?: string;
  onProgress?: (sentShare: number) => void;
  signal?: AbortSignal;
};

function hasErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const { error } = value;
  return typeof error === 'object' && error !== null && 'message' in error && 'code' in error;
}

function errorOf(status: number, body: unknown): ApiError {
  if (hasErrorBody(body)) return new ApiError(status, body.error.code, body.error.message);
  return new ApiError(status, 'http_error', `the server answered ${status}`);
}

async function toApiError(response: Response): Promise<ApiError> {
  return errorOf(response.status, await response.json().catch(() => undefined));
}

const OFFLINE_MESSAGE = 'Jarvis cannot be reached. Check your connection.';

function parseJsonText(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

// Bodies are trusted to match the API's contracts (they are its own types); nothing read from
// them is ever put into the page as HTML, so a surprise shape can break a view, not the page.
async function readJson<T>(response: Response): Promise<T> {
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

// Every call carries the key in the Authorization header: never in a URL, where it would land
// in history, logs and Referer headers. A 401 means the key was revoked or mistyped.
export function createApiClient(apiKey: string, onUnauthorized: () => void): ApiClient {
  async function open(path: string, init: RequestInit): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${apiKey}`);
    let response: Response;
    try {
      response = await fetch(path, { ...init, headers });
    } catch (error) {
      if (error instanceof DOMException && error.name === 'AbortError') throw error;
      throw new ApiError(0, 'offline', OFFLINE_MESSAGE);
    }
    if (response.ok) return response;
    const apiError = await toApiError(response);
    if (response.status === 401) onUnauthorized();
    throw apiError;
  }

  // XMLHttpRequest rather than fetch: fetch tells nothing of a request body's progress, and a
  // 25 MiB file on a slow uplink takes long enough that the user should see it move.
  function upload<T>(path: string, body: FormData | Blob, options: UploadOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const request = new XMLHttpRequest();
      request.open(options.method ?? 'POST', path);
      request.setRequestHeader('authorization', `Bearer ${apiKey}`);
      request.setRequestHeader('accept', 'application/json');
      if (options.contentType) request.setRequestHeader('content-type', options.contentType);
      request.upload.addEventListener('progress', (event) => {
        if (event.lengthComputable && event.total > 0) {
          options.onProgress?.(event.loaded / event.total);
        }
      });
      request.addEventListener('load', () => {
        const body = parseJsonText(request.responseText);
        if (request.status >= 200 && request.status < 300) {
          resolve(body as T);
          return;
        }
        if (request.status === 401) onUnauthorized();
        reject(errorOf(request.status, body));
      });
      request.addEventListener('error', () => reject(new ApiError(0, 'offline', OFFLINE_MESSAGE)));
      request.addEventListener('abort', () =>
        reject(new DOMException('the upload was cancelled', 'AbortError')),
      );
      options.signal?.addEventListener('abort', () => request.abort(), { once: true });
      request.send(body);
    });
  }

  return {
    open,
    upload,
    async get(path) {
      return readJson(await open(path, { headers: { accept: 'application/json' } }));
    },
    async send(method, path, body) {
      const response = await open(path, {
        method,
        headers: { accept: 'application/json', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return readJson(response);
    },
  };
}

// Builds `path?a=1&b=x` from the defined entries only.
export function withQuery(
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}
