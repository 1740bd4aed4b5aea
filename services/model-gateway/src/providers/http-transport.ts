import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { fromHttpResponse } from './provider-error';

type HttpCall = { timeoutMs: number; signal: AbortSignal };

// JSON over HTTP to one provider's base URL, on node:http/https with a keep-alive pool: at a
// fraction of the CPU of fetch (undici and web streams), which the SDKs use and which cost the
// gateway more per call than anything else it does.
export type HttpTransport = {
  // The parsed JSON body of a 2xx answer.
  postJson(path: string, body: unknown, call: HttpCall): Promise<unknown>;
  // The text of a 2xx answer as it arrives; the timeout and the caller's signal still apply
  // until it ends.
  postStream(path: string, body: unknown, call: HttpCall): Promise<AsyncIterable<string>>;
};

// As undici's default (the SDKs' fetch): an idle connection is dropped before servers commonly
// close theirs (Node's 5 s), so a reused one is rarely reset under a request. A server that
// announces a shorter Keep-Alive timeout gets its own, less a second (Node's agent does that).
const IDLE_SOCKET_MS = 4_000;

// Failures arrive as what classifyError already knows: a ProviderError for an HTTP status, an
// error named TimeoutError for the timeout (what AbortSignal.timeout gives fetch), the signal's
// reason when the caller cancels, and the socket's own error for a network failure.
export function createHttpTransport(
  baseUrl: string,
  headers: Record<string, string>,
): HttpTransport {
  const base = new URL(baseUrl);
  const isHttps = base.protocol === 'https:';
  const agent = isHttps
    ? new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS })
    : new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
  const send = isHttps ? httpsRequest : httpRequest;
  const target = urlToHttpOptions(base);
  const basePath = base.pathname.replace(/\/$/, '');
  const fixedHeaders = {
    ...headers,
    accept: 'application/json',
    'content-type': 'application/json',
  };

  // The response of a 2xx answer, not yet read; any other status fails with its ProviderError.
  function open(path: string, body: unknown, call: HttpCall): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      if (call.signal.aborted) {
        reject(call.signal.reason);
        return;
      }
      const payload = JSON.stringify(body);
      const req = send({
        ...target,
        path: basePath + path,
        method: 'POST',
        agent,
        headers: { ...fixedHeaders, 'content-length': Buffer.byteLength(payload) },
      });
      let response: IncomingMessage | undefined;
      // Once the answer has begun, failing the response (not the request) is what makes a
      // reader of its body see this error rather than a generic "aborted".
      const fail = (error: unknown) => {
        const reason = error instanceof Error ? error : new Error(String(error));
        if (response) response.destroy(reason);
        else req.destroy(reason);
      };
      const timer = setTimeout(
        () => fail(new DOMException('no answer in time', 'TimeoutError')),
        call.timeoutMs,
      );
      const onAbort = () => fail(call.signal.reason);
      call.signal.addEventListener('abort', onAbort, { once: true });
      const settle = () => {
        clearTimeout(timer);
        call.signal.removeEventListener('abort', onAbort);
      };
      req.on('error', (error) => {
        settle();
        reject(error);
      });
      req.once('response', (res) => {
        response = res;
        res.setEncoding('utf8');
        res.once('close', settle);
        // Handled here so that a failure before the caller reads the body cannot crash the
        // process; the caller's reader still sees it.
        res.on('error', reject);
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          resolve(res);
          return;
        }
        readText(res).then(
          (text) => reject(fromHttpResponse(status, text, res.headers['retry-after'])),
          reject,
        );
      });
      req.end(payload);
    });
  }

  return {
    async postJson(path, body, call) {
      const response = await open(path, body, call);
      return JSON.parse(await readText(response));
    },
    postStream: open,
  };
}

function readText(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    response.on('data', (chunk: string) => {
      text += chunk;
    });
    response.once('end', () => resolve(text));
    response.once('error', reject);
  });
}
