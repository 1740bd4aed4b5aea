import type { UserEvent } from '@jarvis/contracts';
import { type ApiClient, ApiError } from './api-client';
import { createSseParser } from './sse-parser';

export type UserEventsFeed = {
  // Opens GET /v1/events and keeps it open (reconnecting) until stop().
  start(): void;
  stop(): void;
  subscribe(listener: (event: UserEvent) => void): () => void;
  // Resolves once the stream is open (or failed to open, or `timeoutMs` passed): whatever
  // happens after that arrives here, so a view that loads its state then misses nothing.
  whenOpen(timeoutMs: number): Promise<void>;
};

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = window.setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        window.clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

function isUserEvent(value: unknown): value is UserEvent {
  return (
    typeof value === 'object' && value !== null && 'type' in value && typeof value.type === 'string'
  );
}

// The user's live events (approvals, missions, schedules firing), one stream per signed-in page.
// Read from fetch, as the chat's stream is: EventSource cannot send the key in a header. After a
// drop it reconnects with Last-Event-ID, so the gateway sends what happened meanwhile (it keeps
// 24 h); before the first event there is no id to give, and a drop then can lose what happened
// during the reconnect, which the views' own state (reloaded on use) still shows.
export function createUserEventsFeed(client: ApiClient): UserEventsFeed {
  const listeners = new Set<(event: UserEvent) => void>();
  let controller: AbortController | undefined;
  let lastEventId: string | undefined;
  let isOpen = false;
  let openWaiters: (() => void)[] = [];

  function markOpen(): void {
    isOpen = true;
    for (const resolve of openWaiters) resolve();
    openWaiters = [];
  }

  function emit(event: UserEvent): void {
    for (const listener of listeners) {
      // One listener's fault must not end the stream (its reconnect would replay the event).
      try {
        listener(event);
      } catch (error) {
        reportError(error);
      }
    }
  }

  async function read(response: Response): Promise<void> {
    if (!response.body) return;
    const parser = createSseParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        for (const message of parser.push(value)) {
          if (message.id !== undefined) lastEventId = message.id;
          let data: unknown;
          try {
            data = JSON.parse(message.data);
          } catch {
            continue;
          }
          // Types this UI does not know yet are someone else's business.
          if (isUserEvent(data)) emit(data);
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    let delay = RETRY_MIN_MS;
    while (!signal.aborted) {
      try {
        const response = await client.open('/v1/events', {
          headers: {
            accept: 'text/event-stream',
            ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
          },
          signal,
        });
        markOpen();
        delay = RETRY_MIN_MS;
        await read(response);
      } catch (error) {
        if (signal.aborted) return;
        // A refused key signs the user out (the client's onUnauthorized): nothing to follow.
        if (error instanceof ApiError && error.status === 401) return;
        // Views waiting for the stream go on without it.
        markOpen();
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  }

  return {
    start() {
      if (controller) return;
      controller = new AbortController();
      void run(controller.signal);
    },
    stop() {
      controller?.abort();
      controller = undefined;
      markOpen();
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    whenOpen(timeoutMs) {
      if (isOpen) return Promise.resolve();
      return new Promise((resolve) => {
        openWaiters.push(resolve);
        window.setTimeout(resolve, timeoutMs);
      });
    },
  };
}
