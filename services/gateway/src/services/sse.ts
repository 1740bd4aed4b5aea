import type { Response } from 'express';

// Proxies cut connections that stay silent for long (often after 30–60 s).
const KEEP_ALIVE_MS = 15_000;

export type SseStream = {
  send(event: string, data: unknown, id?: number): void;
  end(): void;
  // Resolves when the stream ends: ended here, or the client went away.
  closed: Promise<void>;
};

// One server-sent event. JSON has no raw line breaks, so the data is always a single line.
function formatEvent(event: string, data: unknown, id?: number): string {
  const idLine = id === undefined ? '' : `id: ${id}\n`;
  return `${idLine}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

// Turns the response into an event stream. No buffering on the way (X-Accel-Buffering for
// nginx-like proxies) and no caching, or the client sees events late or stale; a comment every
// 15 s keeps an idle stream open through proxies. The stream ends when the gateway stops, so the
// client reconnects (to another replica, or this one restarted) instead of holding the stop up.
export function openSse(res: Response, stopping: AbortSignal): SseStream {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  const end = () => {
    clearInterval(keepAlive);
    if (!res.writableEnded) res.end();
  };
  if (stopping.aborted) end();
  else stopping.addEventListener('abort', end, { once: true });
  const closed = new Promise<void>((resolve) => {
    const onClose = () => {
      clearInterval(keepAlive);
      stopping.removeEventListener('abort', end);
      resolve();
    };
    // A client that left while the turn was being accepted has closed already.
    if (res.destroyed || res.socket?.destroyed !== false) onClose();
    else res.on('close', onClose);
  });
  return {
    send(event, data, id) {
      if (!res.writableEnded) res.write(formatEvent(event, data, id));
    },
    end,
    closed,
  };
}
