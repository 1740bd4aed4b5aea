import { BusError } from '@jarvis/bus';
import { TurnSubmitRequest } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import { deleteSubmission, listStaleSubmissions } from '../repositories/submissions-repository';
import { queueTurn, type SubmitDeps } from './submit-turn';

const SWEEP_BATCH = 50;

// Finishes the submits that died between their steps (an orchestrator crash or a lost database
// connection after the message was stored): each stale submission is queued again from where
// its steps are idempotent. Every replica sweeps; two finishing the same one store it once.
export function startSubmissionSweeper(
  deps: SubmitDeps & { logger: Logger },
  options: { intervalMs: number; staleMs: number },
): { stop(): void } {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      for (const stale of await listStaleSubmissions(deps.pool, options.staleMs, SWEEP_BATCH)) {
        const request = TurnSubmitRequest.safeParse(stale.request);
        if (!request.success) {
          deps.logger.error({ turnId: stale.turnId }, 'unreadable turn submission; dropped');
          await deleteSubmission(deps.pool, stale.turnId);
          continue;
        }
        await queueTurn(deps, request.data, false).then(
          () => deps.logger.warn({ turnId: stale.turnId }, 'queued a turn its submit left behind'),
          (error: unknown) => {
            // Refused for good (queueTurn dropped it) or to try again at the next sweep.
            if (!(error instanceof BusError)) throw error;
            deps.logger.warn({ err: error, turnId: stale.turnId }, 'could not queue a stale turn');
          },
        );
      }
    } catch (error) {
      deps.logger.warn({ err: error }, 'turn submission sweep failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
