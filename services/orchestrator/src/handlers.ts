import { type Bus, startWorker, type WorkQueueOptions } from '@jarvis/bus';
import { turnRequested, turnSubmit } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { runTurn, type TurnDeps } from './services/run-turn';
import { submitTurn } from './services/submit-turn';

export function registerHandlers(bus: Bus, pool: Pool) {
  return [bus.serve(turnSubmit, (request) => submitTurn(bus, pool, request))];
}

export function startTurnWorker(deps: TurnDeps, queue: WorkQueueOptions) {
  return startWorker(deps.bus, turnRequested, queue, (turn, delivery) =>
    runTurn(deps, turn, delivery.deliveryCount),
  );
}
