import { type Bus, startWorker, type WorkQueueOptions } from '@jarvis/bus';
import { turnCancel, turnRequested, turnSubmit } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { Redis } from 'ioredis';
import { cancelTurn } from './services/cancel-turn';
import { runTurn, type TurnDeps } from './services/run-turn';
import { submitTurn } from './services/submit-turn';

export function registerHandlers(bus: Bus, pool: Pool, redis: Redis) {
  return [
    bus.serve(turnSubmit, (request) => submitTurn(bus, pool, request)),
    bus.serve(turnCancel, (request) => cancelTurn({ bus, pool, redis }, request)),
  ];
}

export function startTurnWorker(deps: TurnDeps, queue: WorkQueueOptions) {
  return startWorker(deps.bus, turnRequested, queue, (turn, delivery) =>
    runTurn(deps, turn, delivery.deliveryCount),
  );
}
