import { BusError } from '@jarvis/bus';
import { classifyError, ProviderError } from '../providers/provider-error';

export type RetrySettings = {
  timeoutMs: number;
  retries: number;
  retryBaseMs: number;
  retryMaxWaitMs: number;
};

export type RetryScope = {
  deadline: number;
  signal: AbortSignal;
  // False once a retry could no longer be hidden from the caller (a streamed piece went out).
  canRetry(): boolean;
  // Told how long each pause between tries lasted: time spent waiting on the provider.
  onPaused?(ms: number): void;
};

// One model, retried on 429, 5xx and network errors with exponential backoff and full jitter,
// unless the provider asks for a longer pause than is worth waiting for; each attempt gets the
// per-call timeout or what is left of the deadline, whichever is shorter.
export async function withRetries<T>(
  settings: RetrySettings,
  scope: RetryScope,
  attempt: (timeoutMs: number) => Promise<T>,
): Promise<T> {
  for (let tries = 0; ; tries++) {
    const remaining = scope.deadline - Date.now();
    if (remaining <= 0) throw new ProviderError('timeout', 'the call ran out of time');
    try {
      return await attempt(Math.min(settings.timeoutMs, remaining));
    } catch (error) {
      // A typed answer (bad schema, output that stays malformed) is final, not a provider fault.
      if (error instanceof BusError) throw error;
      const failure = classifyError(error, scope.signal);
      if (!failure.retryable || tries >= settings.retries || !scope.canRetry()) throw failure;
      const backoff = Math.random() * settings.retryBaseMs * 2 ** tries;
      const wait = failure.retryAfterMs ?? backoff;
      if (wait > settings.retryMaxWaitMs || wait >= scope.deadline - Date.now()) throw failure;
      const pausedAt = performance.now();
      try {
        await sleep(wait, scope.signal);
      } finally {
        scope.onPaused?.(performance.now() - pausedAt);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new ProviderError('cancelled', 'the call was cancelled'));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ProviderError('cancelled', 'the call was cancelled'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
