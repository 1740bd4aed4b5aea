import type { Logger } from '@jarvis/telemetry';

// Claimed runs waiting for delivery: at most `concurrency` deliveries at once, and some held back
// until a given delay has passed (catch-up spread after a start). A promise queue library
// (p-queue) would bound the concurrency but neither hold entries back, list what it holds (whose
// leases the engine keeps), take out entries whose lease passed to another process, nor hand the
// ones not started back at stop, which a stopping scheduler releases to the other replicas at once.

export type QueuedRun<T> = { id: string; item: T };

export class DeliveryQueue<T> {
  private readonly waiting: QueuedRun<T>[] = [];
  private readonly active = new Set<Promise<void>>();
  private readonly delayed = new Map<string, { entry: QueuedRun<T>; timer: NodeJS.Timeout }>();
  // Every entry waiting, held back or being delivered, by id.
  private readonly entries = new Map<string, QueuedRun<T>>();
  private readonly activeIds = new Set<string>();
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
    return this.entries.has(id);
  }

  // What this process holds: the runs whose leases it must keep until they are delivered.
  held(): Array<QueuedRun<T>> {
    return [...this.entries.values()];
  }

  push(entry: QueuedRun<T>, delayMs = 0): void {
    if (this.isStopped || this.entries.has(entry.id)) return;
    this.entries.set(entry.id, entry);
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

  // Takes out runs not yet started (another process holds them now); a delivery under way
  // finishes. Returns how many were taken out.
  drop(ids: Iterable<string>): number {
    let dropped = 0;
    for (const id of ids) {
      if (this.activeIds.has(id) || !this.entries.delete(id)) continue;
      dropped += 1;
      const delayed = this.delayed.get(id);
      if (delayed) {
        clearTimeout(delayed.timer);
        this.delayed.delete(id);
        continue;
      }
      const index = this.waiting.findIndex((entry) => entry.id === id);
      if (index >= 0) this.waiting.splice(index, 1);
    }
    if (dropped > 0) for (const resolve of this.waiters.splice(0)) resolve();
    return dropped;
  }

  // Resolves once fewer than `limit` runs wait or are being delivered: the claims' back-pressure,
  // so that a claim does not take far more than this process delivers soon.
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
    for (const { id } of left) this.entries.delete(id);
    await Promise.allSettled(this.active);
    return left;
  }

  private pump(): void {
    while (!this.isStopped && this.active.size < this.concurrency) {
      const entry = this.waiting.shift();
      if (!entry) return;
      this.activeIds.add(entry.id);
      const task: Promise<void> = this.work(entry.item)
        .catch((error: unknown) => {
          // The run stays running: its lease ends and it is delivered again.
          this.logger.error({ err: error, runId: entry.id }, 'delivery broke off');
        })
        .finally(() => {
          this.active.delete(task);
          this.activeIds.delete(entry.id);
          this.entries.delete(entry.id);
          for (const resolve of this.waiters.splice(0)) resolve();
          this.pump();
        });
      this.active.add(task);
    }
  }
}
