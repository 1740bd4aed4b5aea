// A client of server-sent events for tests: reads a fetch response's stream as it arrives and
// hands out its events one at a time, in order. Comments (keep-alives) are skipped.

export type SseEvent = { event: string; data: string; id?: string };

export type SseConnection = {
  response: Response;
  // The next event; fails if none comes within timeoutMs or the stream ends first.
  next(timeoutMs?: number): Promise<SseEvent>;
  // Every event up to and including the first of this type.
  until(event: string, timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
};

const DEFAULT_TIMEOUT_MS = 30_000;

function parseBlock(block: string): SseEvent | undefined {
  let event = 'message';
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  if (data.length === 0) return undefined;
  return { event, data: data.join('\n'), ...(id === undefined ? {} : { id }) };
}

// Sends the request; resolves once the response headers are in (the stream is open).
export async function connectSse(url: string, init: RequestInit = {}): Promise<SseConnection> {
  const controller = new AbortController();
  const response = await fetch(url, { ...init, signal: controller.signal });
  const queue: SseEvent[] = [];
  let waiter: (() => void) | undefined;
  let isDone = false;
  let failure: unknown;
  const wake = () => {
    waiter?.();
    waiter = undefined;
  };

  void (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
        for (;;) {
          const end = buffer.indexOf('\n\n');
          if (end === -1) break;
          const event = parseBlock(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) queue.push(event);
        }
        wake();
      }
    } catch (error) {
      if (!controller.signal.aborted) failure = error;
    } finally {
      isDone = true;
      wake();
    }
  })();

  async function next(timeoutMs = DEFAULT_TIMEOUT_MS): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const event = queue.shift();
      if (event) return event;
      if (isDone) throw new Error(`the event stream ended${failure ? `: ${String(failure)}` : ''}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`no event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  return {
    response,
    next,
    async until(event, timeoutMs = DEFAULT_TIMEOUT_MS) {
      const deadline = Date.now() + timeoutMs;
      const seen: SseEvent[] = [];
      for (;;) {
        const received = await next(Math.max(deadline - Date.now(), 1));
        seen.push(received);
        if (received.event === event) return seen;
      }
    },
    close: () => controller.abort(),
  };
}
