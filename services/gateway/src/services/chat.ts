import { randomUUID } from 'node:crypto';
import { awaitTurnOutcome, type Bus, TURN_TIMEOUT_MESSAGE } from '@jarvis/bus';
import {
  type ChatAccepted,
  type ChatRequest,
  type ChatResponse,
  isTurnOutcome,
  TurnEvent,
  type TurnFailed,
  type TurnSubmitResponse,
  turnEventSubject,
  turnSubmit,
} from '@jarvis/contracts';
import { v5 as uuidv5 } from 'uuid';
import type { SseStream } from './sse';

export type ChatOptions = { submitTimeoutMs: number; turnTimeoutMs: number };

// Whose turn it is, the client's Idempotency-Key for it, if any, and the zone it is told in
// (undefined: UTC, the orchestrator's default).
export type ChatTurn = {
  userId: string;
  idempotencyKey: string | undefined;
  timeZone: string | undefined;
};

// Names chat turns' ids (UUID version 5): any fixed UUID serves, and changing it would give every
// Idempotency-Key a new turn.
const TURN_ID_NAMESPACE = '5d0c7c1e-52b1-4a3f-9d3e-6a8f2f4b1c07';

// The turn id: new for each request, or, with an Idempotency-Key, the same for every request
// with that key, so a retry listens to the turn it repeats before it asks for it again. Named
// after the user and the key, so users never share one.
function turnIdOf(turn: ChatTurn): string {
  if (turn.idempotencyKey === undefined) return randomUUID();
  return uuidv5(`${turn.userId}\n${turn.idempotencyKey}`, TURN_ID_NAMESPACE);
}

// `stream`: the client follows the answer as it is written, so the model streams it.
function submit(
  bus: Bus,
  turn: ChatTurn,
  request: ChatRequest,
  turnId: string,
  options: ChatOptions,
  stream: boolean,
): Promise<TurnSubmitResponse> {
  return bus.request(
    turnSubmit,
    {
      userId: turn.userId,
      conversationId: request.conversationId,
      message: request.message,
      turnId,
      idempotencyKey: turn.idempotencyKey,
      timeZone: turn.timeZone,
      stream,
    },
    { timeoutMs: options.submitTimeoutMs },
  );
}

// Submits the turn and waits for its outcome event.
export async function runChatTurn(
  bus: Bus,
  turn: ChatTurn,
  request: ChatRequest,
  options: ChatOptions,
): Promise<ChatResponse> {
  const turnId = turnIdOf(turn);
  const event = await awaitTurnOutcome(bus, turnId, options.turnTimeoutMs, async () => {
    await submit(bus, turn, request, turnId, options, false);
  });
  return toChatResponse(event);
}

// Submits the turn and streams its events: `accepted` (its ids, so the client can cancel it),
// the progress events, and the outcome (`done` or `failed`), after which the stream ends.
// Nothing is written until the turn is accepted, so a refused one is answered as a plain HTTP
// error; events that come first wait, in order. The client going away only stops the writing:
// the turn goes on and its reply is stored. A turn silent for turnTimeoutMs ends the stream with
// `failed` of code `timeout`, like the 504 of a JSON answer.
export async function streamChatTurn(
  bus: Bus,
  turn: ChatTurn,
  request: ChatRequest,
  options: ChatOptions,
  open: () => SseStream,
): Promise<void> {
  const turnId = turnIdOf(turn);
  const early: TurnEvent[] = [];
  let stream: SseStream | undefined;
  let settle: (ending: 'done' | 'silent') => void = () => {};
  const ended = new Promise<'done' | 'silent'>((resolve) => {
    settle = resolve;
  });
  let silence: NodeJS.Timeout | undefined;
  const awaitNext = () => {
    clearTimeout(silence);
    silence = setTimeout(() => settle('silent'), options.turnTimeoutMs);
  };
  const write = (target: SseStream, event: TurnEvent) => {
    target.send(event.type, event);
    if (isTurnOutcome(event)) settle('done');
    else awaitNext();
  };
  const subscription = bus.subscribe(turnEventSubject(turnId), TurnEvent, (event) => {
    if (stream) write(stream, event);
    else early.push(event);
  });
  try {
    const accepted = await submit(bus, turn, request, turnId, options, true);
    const opened = open();
    stream = opened;
    const acceptedEvent: ChatAccepted = { type: 'accepted', ...accepted };
    opened.send('accepted', acceptedEvent);
    awaitNext();
    for (const event of early) write(opened, event);
    const ending = await Promise.race([ended, opened.closed]);
    if (ending === 'silent') {
      const timedOut: TurnFailed = {
        type: 'failed',
        turnId,
        runId: accepted.runId,
        conversationId: accepted.conversationId,
        error: { code: 'timeout', message: TURN_TIMEOUT_MESSAGE },
      };
      opened.send(timedOut.type, timedOut);
    }
  } finally {
    clearTimeout(silence);
    subscription.unsubscribe();
    stream?.end();
  }
}

export function toChatResponse(event: Extract<TurnEvent, { type: 'done' }>): ChatResponse {
  return {
    turnId: event.turnId,
    conversationId: event.conversationId,
    runId: event.runId,
    reply: { role: 'assistant', content: event.reply.content },
    usage: event.usage,
    ...(event.approval ? { approval: event.approval } : {}),
  };
}
