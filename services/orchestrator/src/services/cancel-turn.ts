import { type Bus, BusError } from '@jarvis/bus';
import {
  type TurnCancelRequest,
  type TurnCancelResponse,
  turnCancelRequested,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Redis } from 'ioredis';
import { findRunByTurn } from '../repositories/runs-repository';

// Long enough for a queued turn to reach a worker, a crashed one to be redelivered, and a
// running one to end.
const CANCEL_TTL_MS = 3_600_000;

function cancelKey(bus: Bus, turnId: string): string {
  return `${bus.namespace}:turn-cancelled:${turnId}`;
}

// A cancel is written to Redis (the turn may still be queued, or be redelivered to another
// replica later) and then announced to every replica, so the one running the turn stops at once.
export async function cancelTurn(
  deps: { bus: Bus; pool: Pool; redis: Redis },
  request: TurnCancelRequest,
): Promise<TurnCancelResponse> {
  const run = await findRunByTurn(deps.pool, request.userId, request.turnId);
  if (!run) throw new BusError('not_found', 'turn not found');
  if (run.status !== 'queued' && run.status !== 'running') {
    const state = run.status === 'waiting_approval' ? 'waiting for an approval' : run.status;
    throw new BusError('conflict', `the turn has already ended (${state})`);
  }
  await deps.redis.set(cancelKey(deps.bus, run.turnId), '1', 'PX', CANCEL_TTL_MS);
  deps.bus.publish(turnCancelRequested.subject, turnCancelRequested.payload, {
    turnId: run.turnId,
  });
  return { turnId: run.turnId, runId: run.id, status: 'cancelling' };
}

export type TurnCancellation = { signal: AbortSignal; release(): void };

export type TurnCancellations = {
  // The signal of a turn this process is about to run: aborted when its user cancels it, at
  // once if they already have.
  watch(turnId: string): Promise<TurnCancellation>;
};

export function watchTurnCancellations(bus: Bus, redis: Redis): TurnCancellations {
  const running = new Map<string, AbortController>();
  bus.subscribe(turnCancelRequested.subject, turnCancelRequested.payload, ({ turnId }) =>
    running.get(turnId)?.abort(),
  );
  return {
    async watch(turnId) {
      const controller = new AbortController();
      // Listening before looking: a cancel lands in one or the other, never between.
      running.set(turnId, controller);
      try {
        if ((await redis.exists(cancelKey(bus, turnId))) === 1) controller.abort();
      } catch (error) {
        running.delete(turnId);
        throw error;
      }
      return {
        signal: controller.signal,
        release: () => {
          if (running.get(turnId) === controller) running.delete(turnId);
        },
      };
    },
  };
}
