import { isTurnOutcome, TurnEvent, turnEventSubject } from '@jarvis/contracts';
import type { Bus } from './bus';
import { BusError } from './bus-error';

type TurnOutcome = Extract<TurnEvent, { type: 'done' | 'failed' }>;

// What a wait for a turn's outcome says when it gives up: the turn itself is not stopped.
export const TURN_TIMEOUT_MESSAGE = 'no reply in time; the turn goes on and its reply will be kept';

// Runs `start` (what makes the turn go: a submit, a decision on its approval) and waits for the
// turn's next outcome event. The subscription opens first, so a fast turn cannot finish before
// anyone listens; a failed outcome is thrown as its typed error. Every service that starts turns
// for a user (the gateway's chat, the Telegram chat) waits through this one.
export async function awaitTurnOutcome(
  bus: Bus,
  turnId: string,
  timeoutMs: number,
  start: () => Promise<void>,
): Promise<Extract<TurnEvent, { type: 'done' }>> {
  let onOutcome: (event: TurnOutcome) => void = () => {};
  const outcome = new Promise<TurnOutcome>((resolve) => {
    onOutcome = resolve;
  });
  // Progress events (text, tool calls) are for streaming clients; this answer waits for the end.
  const subscription = bus.subscribe(turnEventSubject(turnId), TurnEvent, (event) => {
    if (isTurnOutcome(event)) onOutcome(event);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await start();
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new BusError('timeout', TURN_TIMEOUT_MESSAGE)), timeoutMs);
    });
    const event = await Promise.race([outcome, timeout]);
    if (event.type === 'failed') throw new BusError(event.error.code, event.error.message);
    return event;
  } finally {
    clearTimeout(timer);
    subscription.unsubscribe();
  }
}
