import { randomUUID } from 'node:crypto';
import { type EventReader, ensureUserEventStream, ensureWorkQueue, readEvents } from '@jarvis/bus';
import {
  TURNS_STREAM,
  TurnSubmitRequest,
  turnRequested,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type FakeLlm, startFakeLlm, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServicesFixture, startServicesFixture } from '../services-fixture';
import { watchTurnCancellations } from './cancel-turn';
import { watchChatRoute } from './chat-route';
import { runTurn, type TurnDeps } from './run-turn';
import { submitTurn } from './submit-turn';

// A schedule's prompt answered for real (memory and the model gateway as their own processes, the
// test kit's fake LLM behind it): the turn's end is told on the user's event stream with its
// reply, for the user's notification channels.
let fake: FakeLlm;
let fixture: ServicesFixture;
let deps: TurnDeps;

beforeAll(async () => {
  fake = await startFakeLlm();
  fixture = await startServicesFixture(['memory', 'model-gateway'], {
    OPENAI_BASE_URL: fake.openaiBaseUrl,
    OPENAI_API_KEY: 'test-key',
    MODEL_ROUTE_CHAT: 'openai/fake-chat',
    MODEL_ROUTE_UTILITY: 'openai/fake-chat',
    MODEL_ROUTE_EMBED: '',
  });
  await ensureUserEventStream(fixture.bus);
  await ensureWorkQueue(fixture.bus, turnRequested, {
    stream: TURNS_STREAM,
    consumer: 'orchestrator',
    ackWaitMs: 30_000,
    maxDeliver: -1,
    maxInFlight: 1,
  });
  const logger = createLogger('orchestrator-test', 'silent');
  deps = {
    bus: fixture.bus,
    pool: fixture.db.pool,
    redis: fixture.redis,
    logger,
    contextTokenBudget: 8_000,
    historyLimit: 50,
    tools: [],
    approvalTtlMs: 60_000,
    loop: {
      maxSteps: 4,
      toolTimeoutMs: 1_000,
      turnDeadlineMs: 20_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 10_000,
    },
    lockLeaseMs: 5_000,
    maxAttempts: 3,
    cancellations: watchTurnCancellations(fixture.bus, fixture.redis),
    chatRoute: watchChatRoute({ bus: fixture.bus, logger }),
  };
});

afterAll(async () => {
  await fixture?.stop();
  await fake?.close();
});

describe("a scheduled turn's end", () => {
  it("is told with its reply on the user's event stream", { timeout: 30_000 }, async () => {
    const userId = randomUUID();
    const scheduleId = randomUUID();
    fake.onChat(() => ({ content: 'Three meetings today, the first at nine.' }));
    const events: UserEvent[] = [];
    const reader: EventReader = await readEvents(
      fixture.client,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(userId),
        schema: UserEvent,
        afterSeq: 0,
      },
      (event) => events.push(event),
    );

    const request = TurnSubmitRequest.parse({
      userId,
      turnId: randomUUID(),
      message: 'Brief me on my day',
      scheduleId,
    });
    const submitted = await submitTurn(deps, request);
    const outcome = await runTurn(
      deps,
      { ...submitted, userId, message: request.message, stream: false },
      1,
    );

    expect(outcome).toEqual({ type: 'ack' });
    const result = await waitFor(() => events.find((event) => event.type === 'schedule_result'), {
      what: 'the schedule_result event',
    });
    await reader.stop();
    expect(result).toEqual({
      type: 'schedule_result',
      occurredAt: expect.any(String),
      scheduleId,
      turnId: submitted.turnId,
      conversationId: submitted.conversationId,
      status: 'done',
      text: 'Three meetings today, the first at nine.',
    });
  });
});
