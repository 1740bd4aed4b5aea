import { randomUUID } from 'node:crypto';
import { type EventReader, readEvents } from '@jarvis/bus';
import {
  TurnSubmitRequest,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTurnFixture, type TurnFixture } from '../turn-fixture';
import { runTurn } from './run-turn';
import { submitTurn } from './submit-turn';

// A schedule's prompt answered for real (memory and the model gateway as their own processes, the
// test kit's fake LLM behind it): the turn's end is told on the user's event stream with its
// reply, for the user's notification channels.
let turns: TurnFixture;

beforeAll(async () => {
  turns = await startTurnFixture();
});

afterAll(async () => {
  await turns?.stop();
});

describe("a scheduled turn's end", () => {
  it("is told with its reply on the user's event stream", { timeout: 30_000 }, async () => {
    const userId = randomUUID();
    const scheduleId = randomUUID();
    turns.fake.onChat(() => ({ content: 'Three meetings today, the first at nine.' }));
    const events: UserEvent[] = [];
    const reader: EventReader = await readEvents(
      turns.fixture.client,
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
    const submitted = await submitTurn(turns.deps, request);
    const outcome = await runTurn(
      turns.deps,
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
