import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import {
  type ChatRequest,
  type ChatResponse,
  isTurnOutcome,
  TurnEvent,
  turnEventSubject,
  turnSubmit,
} from '@jarvis/contracts';

type TurnOutcome = Extract<TurnEvent, { type: 'done' | 'failed' }>;

export type ChatOptions = { submitTimeoutMs: number; turnTimeoutMs: number };

// Submits the turn and waits for its outcome event.
export async function runChatTurn(
  bus: Bus,
  userId: string,
  request: ChatRequest,
  options: ChatOptions,
): Promise<ChatResponse> {
  const turnId = randomUUID();
  const event = await awaitTurnOutcome(bus, turnId, options.turnTimeoutMs, async () => {
    await bus.request(
      turnSubmit,
      {
        userId,
        conversationId: request.conversationId,
        message: request.message,
        turnId,
        timeZone: request.timeZone,
      },
      { timeoutMs: options.submitTimeoutMs },
    );
  });
  return toChatResponse(event);
}

export function toChatResponse(event: Extract<TurnEvent, { type: 'done' }>): ChatResponse {
  return {
    conversationId: event.conversationId,
    runId: event.runId,
    reply: { role: 'assistant', content: event.reply.content },
    usage: event.usage,
    ...(event.approval ? { approval: event.approval } : {}),
  };
}

// Runs `start` (what makes the turn go: a submit, a decision on its approval) and waits for the
// turn's next outcome event. The subscription opens first, so a fast turn cannot finish before
// anyone listens; a failed outcome is thrown as its typed error.
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
      timer = setTimeout(
        () =>
          reject(
            new BusError(
              'timeout',
              'no reply in time; the turn goes on and its reply will be kept',
            ),
          ),
        timeoutMs,
      );
    });
    const event = await Promise.race([outcome, timeout]);
    if (event.type === 'failed') throw new BusError(event.error.code, event.error.message);
    return event;
  } finally {
    clearTimeout(timer);
    subscription.unsubscribe();
  }
}
