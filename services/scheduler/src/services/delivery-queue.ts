import type { Logger } from '@jarvis/telemetry';

// Claimed runs waiting for delivery: at most `concurrency` deliveries at once, and some held back
// until a given delay has passed (catch-up spread after a start). A promise queue library
// (p-queue) would bound the concurrency but neither hold entries back nor hand the ones not
// started back at stop, which a stopping scheduler releases to the other replicas at once.

export type QueuedRun<T> = { id: string; item: T };

export class DeliveryQueue<T> {
  private readonly waiting: QueuedRun<T>[] = [];
  private readonly active = new Set<Promise<void>>();
  private readonly delayed = new Map<string, { entry: QueuedRun<T>; timer: NodeJS.Timeout }>();
  private readonly ids = new Set<string>();
  private readonly waiters: Array<() => void> = [];
  private isStopped = false;

  constructor(
    private readonly concurrency: number,
    private readonly work: (item: T) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  // Whether the run is queued or being delivered here: a lease of its own that ran out while it
  // waited must not make this process deliver it twice at once.
  has(id: string): boolean {
    return this.ids.has(id);
  }

  push(entry: QueuedRun<T>, delayMs = 0): void {
    if (this.isStopped || this.ids.has(entry.id)) return;
    this.ids.add(entry.id);
    if (delayMs <= 0) {
      this.waiting.push(entry);
      this.pump();
      return;
    }
    const timer = setTimeout(() => {
      this.delayed.delete(entry.id);
      this.waiting.push(entry);
      this.pump();
    }, delayMs);
    this.delayed.set(entry.id, { entry, timer });
  }

  // Resolves once fewer than `limit` runs wait or are being delivered: the claims' back-pressure,
  // so that claimed runs do not wait out their lease in this queue.
  async waitBelow(limit: number): Promise<void> {
    while (this.waiting.length + this.active.size >= limit) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  // Deliveries in progress finish; what has not started is handed back, for the caller to
  // release to other processes.
  async stop(): Promise<Array<QueuedRun<T>>> {
    this.isStopped = true;
    const left = [...this.waiting.splice(0)];
    for (const { entry, timer } of this.delayed.values()) {
      clearTimeout(timer);
      left.push(entry);
    }
    this.delayed.clear();
    await Promise.allSettled(this.active);
    return left;
  }

  private pump(): void {
    while (!this.isStopped && this.active.size < this.concurrency) {
      const entry = this.waiting.shift();
      if (!entry) return;
      const task: Promise<void> = this.work(entry.item)
        .catch((error: unknown) => {
          // The run stays running: its lease ends and it is delivered again.
          this.logger.error({ err: error, runId: entry.id }, 'delivery broke off');
        })
        .finally(() => {
          this.active.delete(task);
          this.ids.delete(entry.id);
          for (const resolve of this.waiters.splice(0)) resolve();
          this.pump();
        });
      this.active.add(task);
    }
  }
}
