import { startWorker, type WorkQueueOptions } from '@jarvis/bus';
import { turnCancel, turnRequested, turnSubmit } from '@jarvis/contracts';
import { cancelTurn } from './services/cancel-turn';
import { runTurn, type TurnDeps } from './services/run-turn';
import { type SubmitDeps, submitTurn } from './services/submit-turn';

export function registerHandlers(submit: SubmitDeps) {
  const { bus, pool, redis } = submit;
  return [
    bus.serve(turnSubmit, (request) => submitTurn(submit, request)),
    bus.serve(turnCancel, (request) => cancelTurn({ bus, pool, redis }, request)),
  ];
}

export function startTurnWorker(deps: TurnDeps, queue: WorkQueueOptions) {
  return startWorker(deps.bus, turnRequested, queue, (turn, delivery) =>
    runTurn(deps, turn, delivery.deliveryCount),
  );
}
