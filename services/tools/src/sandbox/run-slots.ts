// At most `size` holders at once; the others wait in arrival order. A waiter whose signal aborts
// leaves the queue and rejects with the signal's reason.
export function createRunSlots(size: number) {
  let free = size;
  const waiting: Array<() => void> = [];

  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free += 1;
  };

  return {
    async acquire(signal?: AbortSignal): Promise<() => void> {
      signal?.throwIfAborted();
      if (free > 0) {
        free -= 1;
        return release;
      }
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          waiting.splice(waiting.indexOf(grant), 1);
          reject(signal?.reason);
        };
        const grant = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        waiting.push(grant);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      return release;
    },
  };
}
