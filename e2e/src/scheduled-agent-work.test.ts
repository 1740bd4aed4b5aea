import {
  MissionResponse,
  RunsGetResponse,
  ScheduleResponse,
  SchedulesRunsResponse,
  UserEvent,
} from '@jarvis/contracts';
import {
  connectSse,
  type FakeLlmRequest,
  type SseConnection,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A promise and what settles it.
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

// Schedules whose action is agent work, through the whole stack: a prompt's turn and a mission
// start when the occurrence falls due, and an occurrence whose previous turn is still going is
// skipped rather than run beside it.
describe('scheduled agent work', () => {
  let fixture: StackFixture;
  let key: string;
  let db: pg.Client;
  // Holds the model's answer to "what is new?" until the test lets it go.
  let newsHeld = gate();
  let newsReached = gate();

  const system = (request: FakeLlmRequest) => sentMessages(request)[0]?.content ?? '';

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };

  const createSchedule = async (schedule: Record<string, unknown>) => {
    const created = await api('POST', '/v1/schedules', schedule);
    expect(created.status).toBe(201);
    return ScheduleResponse.parse(created.body).schedule;
  };

  // The user's events from now on (GET /v1/events).
  const connections: SseConnection[] = [];
  const listen = async () => {
    const connection = await connectSse(`${fixture.stack.gatewayUrl}/v1/events`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    });
    connections.push(connection);
    return connection;
  };
  // The first of the coming events that `isWanted` picks, the others skipped.
  const nextEvent = async <T extends UserEvent>(
    connection: SseConnection,
    isWanted: (event: UserEvent) => event is T,
  ): Promise<T> => {
    for (;;) {
      const event = UserEvent.parse(JSON.parse((await connection.next(30_000)).data));
      if (isWanted(event)) return event;
    }
  };

  // The schedule's runs once there are `count` and none is still being delivered.
  const settledRuns = (id: string, count: number) =>
    waitFor(
      async () => {
        const { runs } = SchedulesRunsResponse.parse(
          (await api('GET', `/v1/schedules/${id}/runs`)).body,
        );
        const isSettled = runs.length >= count && runs.every((run) => run.status !== 'running');
        return isSettled ? runs : undefined;
      },
      { timeoutMs: 30_000, what: `${count} settled runs` },
    );

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('sam')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    fixture.fake.onChat((request) => {
      if (system(request).includes('Write the report of a mission')) {
        return { content: 'Budget report: on track.' };
      }
      if (system(request).includes('one task of a mission')) return { content: 'checked' };
      if (!system(request).startsWith('You are Jarvis')) return { content: '{"operations": []}' };
      if (sentMessages(request).some((message) => message.content.includes('what is new?'))) {
        newsReached.open();
        return newsHeld.opened.then(() => ({ content: 'Nothing new.' }));
      }
      return { content: 'All quiet today.' };
    });
  });

  afterAll(async () => {
    for (const connection of connections) connection.close();
    await db?.end();
    await fixture?.close();
  });

  it("runs a prompt's turn when it falls due, its reply in the conversation and on /v1/events", async () => {
    const events = await listen();
    const schedule = await createSchedule({
      kind: 'once',
      at: new Date(Date.now() + 2_000).toISOString(),
      action: { type: 'prompt', instruction: 'brief me on my day' },
    });

    const [run] = await settledRuns(schedule.id, 1);
    expect(run).toMatchObject({ status: 'fired', runId: expect.any(String) });
    const turn = await waitFor(
      async () => {
        const found = RunsGetResponse.parse((await api('GET', `/v1/runs/${run?.runId}`)).body);
        return found.run.status === 'completed' ? found.run : undefined;
      },
      { timeoutMs: 30_000, what: "the prompt's turn completed" },
    );
    const { rows } = await db.query<{ role: string; content: string; metadata: unknown }>(
      'SELECT role, content, metadata FROM memory.messages WHERE conversation_id = $1 ORDER BY seq',
      [turn.conversationId],
    );
    expect(rows).toEqual([
      {
        role: 'user',
        content: 'brief me on my day',
        metadata: expect.objectContaining({ scheduleId: schedule.id }),
      },
      { role: 'assistant', content: 'All quiet today.', metadata: expect.anything() },
    ]);
    // The reply reaches the user's channels as the schedule's result.
    const result = await nextEvent(
      events,
      (event): event is Extract<UserEvent, { type: 'schedule_result' }> =>
        event.type === 'schedule_result',
    );
    expect(result).toMatchObject({
      scheduleId: schedule.id,
      conversationId: turn.conversationId,
      status: 'done',
      text: 'All quiet today.',
    });
  });

  it('starts a mission when it falls due, made by the schedule, and tells its report', async () => {
    const events = await listen();
    const schedule = await createSchedule({
      kind: 'once',
      at: new Date(Date.now() + 2_000).toISOString(),
      action: {
        type: 'mission',
        objective: 'check my budget file',
        tasks: [{ title: 'Read the budget', brief: 'Read budget.md and compare with last month' }],
      },
    });

    const [run] = await settledRuns(schedule.id, 1);
    expect(run).toMatchObject({ status: 'fired', missionId: expect.any(String) });
    const mission = await waitFor(
      async () => {
        const found = MissionResponse.parse(
          (await api('GET', `/v1/missions/${run?.missionId}`)).body,
        ).mission;
        return found.reportMessageId ? found : undefined;
      },
      { timeoutMs: 30_000, what: 'the mission reported' },
    );
    expect(mission).toMatchObject({
      objective: 'check my budget file',
      createdBy: 'schedule',
      status: 'completed',
      report: expect.stringContaining('Budget report: on track.'),
    });
    const ended = await nextEvent(
      events,
      (event): event is Extract<UserEvent, { type: 'mission_updated' }> =>
        event.type === 'mission_updated' && event.change === 'ended',
    );
    expect(ended).toMatchObject({
      mission: { id: mission.id },
      reportMessageId: mission.reportMessageId,
    });
    expect(ended.report).toContain('Budget report: on track.');
  });

  it('skips an occurrence whose previous turn is still going', async () => {
    newsHeld = gate();
    newsReached = gate();
    const schedule = await createSchedule({
      kind: 'interval',
      everyMinutes: 60,
      startAt: new Date(Date.now() + 2_000).toISOString(),
      action: { type: 'prompt', instruction: 'what is new?' },
    });
    await newsReached.opened;
    try {
      // The first turn is held at the model. As if it had started an hour ago, the next
      // occurrence is due now: the schedule and its history are moved back an hour, and the
      // edit below wakes the scheduler as any change does.
      await db.query(
        `UPDATE scheduler.runs SET scheduled_for = scheduled_for - interval '1 hour'
          WHERE schedule_id = $1`,
        [schedule.id],
      );
      await db.query(
        `UPDATE scheduler.schedules
            SET start_at = start_at - interval '1 hour', next_run_at = next_run_at - interval '1 hour'
          WHERE id = $1`,
        [schedule.id],
      );
      expect((await api('PATCH', `/v1/schedules/${schedule.id}`, { name: 'news' })).status).toBe(
        200,
      );
      const runs = await settledRuns(schedule.id, 2);
      expect(runs.map((one) => [one.status, one.reason])).toEqual([
        ['skipped', 'previous_run_active'],
        ['fired', undefined],
      ]);
    } finally {
      newsHeld.open();
    }
  });
});
