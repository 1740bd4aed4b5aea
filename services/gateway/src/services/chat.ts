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

// Submits the turn and waits for its outcome event. The subscription opens before the submit,
// so a fast turn cannot finish before anyone listens.
export async function runChatTurn(
  bus: Bus,
  userId: string,
  request: ChatRequest,
  options: ChatOptions,
): Promise<ChatResponse> {
  const turnId = randomUUID();
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
    await bus.request(
      turnSubmit,
      { userId, conversationId: request.conversationId, message: request.message, turnId },
      { timeoutMs: options.submitTimeoutMs },
    );
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new BusError(
              'timeout',
              'no reply in time; the turn goes on and its reply will be kept',
            ),
          ),
        options.turnTimeoutMs,
      );
    });
    const event = await Promise.race([outcome, timeout]);
    if (event.type === 'failed') throw new BusError(event.error.code, event.error.message);
    return {
      conversationId: event.conversationId,
      runId: event.runId,
      reply: { role: 'assistant', content: event.reply.content },
      usage: event.usage,
    };
  } finally {
    clearTimeout(timer);
    subscription.unsubscribe();
  }
}
