import type { Queryable } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';
import { pruneScreenshots } from './screenshots-repository';

const DAY_MS = 86_400_000;

// Deletes screenshots older than the retention, at the start and then every `intervalMs`. Every
// replica prunes; the DELETE is the same whoever runs it, so they need no leader.
export function startScreenshotPruner(deps: {
  pool: Queryable;
  logger: Logger;
  retentionDays: number;
  intervalMs: number;
}): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const prune = () => {
    if (running) return;
    running = pruneScreenshots(deps.pool, new Date(Date.now() - deps.retentionDays * DAY_MS))
      .then((count) => {
        if (count > 0) deps.logger.info({ count }, 'pruned old screenshots');
      })
      .catch((error: unknown) => deps.logger.warn({ err: error }, 'could not prune screenshots'))
      .finally(() => {
        running = undefined;
      });
  };
  prune();
  const timer = setInterval(prune, deps.intervalMs);
  timer.unref();
  return {
    // Awaits a prune in hand, so the pool is not closed under it.
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
