import { randomUUID } from 'node:crypto';
import {
  ChatResponse,
  type MissionDetail,
  MissionResponse,
  MissionsListResponse,
  RunsGetResponse,
} from '@jarvis/contracts';
import type { FakeLlmRequest, FakeReply } from '@jarvis/testkit';
import { type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Missions through the whole stack: created by the user or by the model's tool, planned by the
// model or given a plan, tasks run as sub-runs in parallel where they can, and one report posted
// to the conversation.
describe('missions', () => {
  let fixture: StackFixture;
  let key: string;
  let otherKey: string;
  let db: pg.Client;

  const system = (request: FakeLlmRequest) => sentMessages(request)[0]?.content ?? '';
  const isTask = (request: FakeLlmRequest) => system(request).includes('one task of a mission');
  const isPlan = (request: FakeLlmRequest) => system(request).startsWith('You plan missions');
  const isReport = (request: FakeLlmRequest) =>
    system(request).includes('Write the report of a mission');
  const taskTitle = (request: FakeLlmRequest) =>
    /Your task \(\d+ of \d+\): (.+)/.exec(system(request))?.[1] ?? '';

  // Scripts the model: the turn, the plan, each task (by its title) and the report.
  const script = (answers: {
    turn?: (request: FakeLlmRequest) => FakeReply;
    plan?: FakeReply;
    task?: (title: string, request: FakeLlmRequest) => FakeReply;
    report?: FakeReply;
  }) =>
    fixture.fake.onChat((request) => {
      if (isPlan(request)) return answers.plan ?? { content: '{}' };
      if (isTask(request))
        return answers.task?.(taskTitle(request), request) ?? { content: 'done' };
      if (isReport(request)) return answers.report ?? { content: 'report' };
      if (system(request).startsWith('You are Jarvis')) {
        return answers.turn?.(request) ?? { content: 'ok' };
      }
      return { content: '{"operations": []}' };
    });

  const api = async (method: string, path: string, body?: unknown, apiKey = key) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const waitFor = async (id: string, statuses: string[]): Promise<MissionDetail> => {
    const until = Date.now() + 30_000;
    for (;;) {
      const { body } = await api('GET', `/v1/missions/${id}`);
      const { mission } = MissionResponse.parse(body);
      if (statuses.includes(mission.status) && mission.reportMessageId) return mission;
      if (Date.now() > until) throw new Error(`mission not done: ${JSON.stringify(mission)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  const messagesOf = async (conversationId: string) => {
    const { rows } = await db.query<{ role: string; content: string }>(
      'SELECT role, content FROM memory.messages WHERE conversation_id = $1 ORDER BY seq',
      [conversationId],
    );
    return rows;
  };

  beforeAll(async () => {
    // A short ack wait, so the task of a killed orchestrator is redelivered within seconds.
    fixture = await startStackFixture({ MISSION_CONCURRENCY: '3', TURN_ACK_WAIT_MS: '1500' });
    key = (await fixture.createUser('mia')).apiKey;
    otherKey = (await fixture.createUser('oscar')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  it('runs independent tasks in parallel, the dependent one after, and posts one report', async () => {
    script({
      task: (title) => ({
        delayMs: 600,
        content:
          title === 'Find flights'
            ? 'Flights: TAP TP1947 on Friday at 09:05, 120 EUR return.'
            : title === 'Find a hotel'
              ? 'Hotel: Casa do Rio, 90 EUR a night, by the river.'
              : 'Itinerary: fly TP1947, check in at Casa do Rio, port cellars on Saturday.',
      }),
      report: { content: 'Your Porto weekend: fly TP1947 and stay at Casa do Rio.' },
    });

    const created = await api('POST', '/v1/missions', {
      objective: 'Plan a weekend in Porto',
      tasks: [
        { title: 'Find flights', brief: 'Find a return flight to Porto for next weekend.' },
        { title: 'Find a hotel', brief: 'Find a hotel in Porto near the river.' },
        {
          title: 'Make the itinerary',
          brief: 'Put flights and hotel into a plan.',
          dependsOn: [1, 2],
        },
      ],
    });

    expect(created.status).toBe(202);
    const { mission: started } = MissionResponse.parse(created.body);
    expect(started).toMatchObject({ status: 'running', createdBy: 'user' });
    // The first two may already have been picked up; the third waits for them.
    expect(started.tasks.map((task) => task.status !== 'pending')).toEqual([true, true, false]);

    const done = await waitFor(started.id, ['completed']);
    const [flights, hotel, itinerary] = done.tasks;
    expect(done.tasks.map((task) => task.status)).toEqual(['completed', 'completed', 'completed']);
    // The first two ran at the same time; the third only once both had finished.
    const at = (iso: string | null) => new Date(iso ?? 0).getTime();
    expect(at(flights?.startedAt ?? null)).toBeLessThan(at(hotel?.finishedAt ?? null));
    expect(at(hotel?.startedAt ?? null)).toBeLessThan(at(flights?.finishedAt ?? null));
    expect(at(itinerary?.startedAt ?? null)).toBeGreaterThanOrEqual(
      Math.max(at(flights?.finishedAt ?? null), at(hotel?.finishedAt ?? null)),
    );
    // The dependent task's brief carried both results.
    const brief = system(
      fixture.fake
        .chatRequests()
        .find((r) => taskTitle(r) === 'Make the itinerary') as FakeLlmRequest,
    );
    expect(brief).toContain('TAP TP1947');
    expect(brief).toContain('Casa do Rio');
    expect(itinerary?.result).toContain('port cellars');
    // Spending is counted per task and for the mission.
    expect(flights?.usage.inputTokens).toBeGreaterThan(0);
    expect(done.usage.inputTokens).toBeGreaterThan(
      (flights?.usage.inputTokens ?? 0) + (hotel?.usage.inputTokens ?? 0),
    );

    // The start and the report are in the user's conversation, once each.
    const messages = await messagesOf(done.conversationId);
    expect(messages.map((m) => m.content.split('\n')[0])).toEqual([
      'I started a mission: Plan a weekend in Porto',
      'Mission report: Plan a weekend in Porto',
    ]);
    expect(messages[1]?.content).toContain('fly TP1947 and stay at Casa do Rio');
    expect(messages[1]?.content).toContain('(3 of 3 tasks completed)');

    // Each task is a run of its own, with its steps.
    const run = await api('GET', `/v1/runs/${flights?.runId}`);
    const { run: detail } = RunsGetResponse.parse(run.body);
    expect(detail).toMatchObject({ kind: 'mission_task', missionId: done.id, status: 'completed' });
    expect(detail.steps.map((step) => step.kind)).toEqual(['recall', 'model']);

    const list = MissionsListResponse.parse((await api('GET', '/v1/missions?limit=5')).body);
    expect(list.missions.map((mission) => mission.id)).toContain(done.id);
    // Another user sees none of it.
    expect((await api('GET', `/v1/missions/${done.id}`, undefined, otherKey)).status).toBe(404);
    const others = MissionsListResponse.parse(
      (await api('GET', '/v1/missions', undefined, otherKey)).body,
    );
    expect(others.missions).toEqual([]);
  });

  it('lets the model start a mission whose plan it then writes', async () => {
    script({
      turn: (request) =>
        sentMessages(request).some((message) => message.role === 'tool')
          ? { content: 'I started that; the report will follow here.' }
          : {
              toolCalls: [
                { name: 'start_mission', arguments: { objective: 'Compare two laptops' } },
              ],
            },
      plan: {
        content: JSON.stringify({
          tasks: [
            {
              title: 'Laptop A',
              brief: 'Specs of laptop A.',
              dependsOn: [2],
              tools: ['memory_search', 'launch_rocket'],
            },
            { title: 'Laptop B', brief: 'Specs of laptop B.', dependsOn: [], tools: [] },
          ],
        }),
      },
      task: (title) => ({ content: `${title}: 16 GB, 1.2 kg.` }),
      report: { content: 'A and B are much alike.' },
    });

    const response = await fixture.chat(key, { message: 'Compare the two laptops I mentioned.' });
    expect(response.status).toBe(200);
    const turn = ChatResponse.parse(await response.json());
    expect(turn.reply.content).toBe('I started that; the report will follow here.');

    const { missions } = MissionsListResponse.parse(
      (await api('GET', '/v1/missions?limit=1')).body,
    );
    const mission = await waitFor(missions[0]?.id ?? '', ['completed']);
    expect(mission).toMatchObject({
      objective: 'Compare two laptops',
      createdBy: 'model',
      sourceRunId: turn.runId,
      conversationId: turn.conversationId,
    });
    // The plan was tidied: a dependency on a later task and an unknown tool dropped.
    expect(mission.tasks.map((task) => [task.title, task.dependsOn, task.tools])).toEqual([
      ['Laptop A', [], ['memory_search']],
      ['Laptop B', [], []],
    ]);
    // A task limited to memory_search was offered only that; one given no tools, none: each
    // may still ask its user.
    const toolsOffered = (title: string) => {
      const body = fixture.fake.chatRequests().find((r) => taskTitle(r) === title)?.body as {
        tools?: { function: { name: string } }[];
      };
      return (body.tools ?? []).map((tool) => tool.function.name);
    };
    expect(toolsOffered('Laptop A')).toEqual(['memory_search', 'ask_user']);
    expect(toolsOffered('Laptop B')).toEqual(['ask_user']);
    const messages = await messagesOf(turn.conversationId);
    expect(messages.at(-1)?.content).toContain('A and B are much alike.');
  });

  it('stops at its token cap and says so in the report', async () => {
    script({
      // Each answer asks for another search, so only the cap ends the task.
      task: (_title, request) => ({
        toolCalls: [
          {
            name: 'memory_search',
            arguments: { query: `porto ${sentMessages(request).length}` },
          },
        ],
      }),
    });
    const created = await api('POST', '/v1/missions', {
      objective: 'Research everything about Porto',
      maxTokens: 1_000,
      tasks: [
        { title: 'Read up', brief: `Read about Porto. ${'Be thorough. '.repeat(300)}` },
        { title: 'Summarise', brief: 'Summarise it.', dependsOn: [1] },
      ],
    });
    expect(created.status).toBe(202);
    const { mission: started } = MissionResponse.parse(created.body);

    const done = await waitFor(started.id, ['failed']);
    expect(done.error).toMatchObject({ code: 'budget_exceeded' });
    expect(done.tasks.map((task) => task.status)).toEqual(['failed', 'skipped']);
    expect(done.tasks[0]?.error?.code).toBe('budget_exceeded');
    // One model call crossed the cap; none was made after it.
    const calls = fixture.fake.chatRequests().filter((r) => taskTitle(r) === 'Read up');
    expect(calls).toHaveLength(1);
    expect(done.report).toContain('The mission reached its cap of 1000 tokens.');
  });

  it('goes on after the orchestrator dies in the middle of a task, and reports once', async () => {
    script({ task: () => ({ content: 'Found it after all.' }), report: { content: 'All found.' } });
    const hold = fixture.fake.hold();
    const created = await api('POST', '/v1/missions', {
      objective: 'Find the lost keys',
      tasks: [{ title: 'Search', brief: 'Look everywhere.' }],
    });
    const { mission } = MissionResponse.parse(created.body);

    await hold.reached;
    await fixture.stack.killService('orchestrator');
    hold.release();
    await fixture.stack.startService('orchestrator');

    const done = await waitFor(mission.id, ['completed']);
    expect(done.tasks[0]).toMatchObject({ status: 'completed', result: 'Found it after all.' });
    const { rows } = await db.query<{ attempts: number }>(
      'SELECT attempts FROM orchestrator.runs WHERE id = $1',
      [done.tasks[0]?.runId],
    );
    expect(rows).toEqual([{ attempts: 2 }]);
    const reports = (await messagesOf(done.conversationId)).filter((m) =>
      m.content.startsWith('Mission report: Find the lost keys'),
    );
    expect(reports).toHaveLength(1);
  });

  it('cancels a running mission and refuses bad requests', async () => {
    script({ task: () => ({ delayMs: 1_500, content: 'slow result' }) });
    const created = await api('POST', '/v1/missions', {
      objective: 'Slow work',
      tasks: [
        { title: 'Slow one', brief: 'Take your time.' },
        { title: 'After it', brief: 'Then this.', dependsOn: [1] },
      ],
    });
    const { mission } = MissionResponse.parse(created.body);

    const cancelled = await api('POST', `/v1/missions/${mission.id}/cancel`);
    expect(cancelled.status).toBe(200);
    const done = await waitFor(mission.id, ['cancelled']);
    expect(done.tasks[1]).toMatchObject({ status: 'skipped', error: { code: 'cancelled' } });
    expect(done.report).toContain('The mission was cancelled.');
    expect((await api('POST', `/v1/missions/${mission.id}/cancel`)).status).toBe(409);
    expect(
      (await api('POST', `/v1/missions/${mission.id}/cancel`, undefined, otherKey)).status,
    ).toBe(404);

    const refused = async (body: unknown) => {
      const response = await api('POST', '/v1/missions', body);
      expect(response.status).toBe(400);
      return (response.body as { error: { message: string } }).error.message;
    };
    expect(await refused({ objective: '  ' })).toContain('objective');
    expect(
      await refused({
        objective: 'x',
        tasks: [{ title: 'a', brief: 'b', dependsOn: [1] }],
      }),
    ).toContain('only on tasks before it');
    expect(
      await refused({ objective: 'x', tasks: [{ title: 'a', brief: 'b', tools: ['forget'] }] }),
    ).toContain('cannot use forget');
    // A skill the user does not have (mia has none), and a name no skill can have.
    expect(
      await refused({
        objective: 'x',
        tasks: [{ title: 'a', brief: 'b', skills: ['trip-planning'] }],
      }),
    ).toBe('tasks[].skills: there is no skill named trip-planning; you have none');
    expect(
      await refused({ objective: 'x', tasks: [{ title: 'a', brief: 'b', skills: ['Trips'] }] }),
    ).toContain('lowercase');
    expect(
      await refused({
        objective: 'x',
        tasks: Array.from({ length: 9 }, () => ({ title: 'a', brief: 'b' })),
      }),
    ).toContain('8');
    expect(await refused({ objective: 'x', surprise: true })).toContain('surprise');
    expect((await api('GET', '/v1/missions/not-an-id')).status).toBe(400);
    expect((await api('GET', '/v1/missions?limit=0')).status).toBe(400);
  });

  it('asks you a question in the conversation and goes on with your answer in the chat', async () => {
    script({
      task: (_title, request) => {
        const answer = sentMessages(request).find((message) => message.role === 'tool');
        return answer
          ? { content: `Booked by ${answer.content}` }
          : { toolCalls: [{ name: 'ask_user', arguments: { question: 'Train or plane?' } }] };
      },
      report: { content: 'Booked as you asked.' },
    });
    const created = await api('POST', '/v1/missions', {
      objective: 'Book the trip to Oslo',
      tasks: [{ title: 'Book the transport', brief: 'Book a train or a plane to Oslo.' }],
    });
    const { mission: started } = MissionResponse.parse(created.body);
    const until = Date.now() + 20_000;
    let waiting: MissionDetail | undefined;
    while (!waiting?.question) {
      if (Date.now() > until) throw new Error('the task never asked');
      await new Promise((resolve) => setTimeout(resolve, 100));
      waiting = MissionResponse.parse(
        (await api('GET', `/v1/missions/${started.id}`)).body,
      ).mission;
    }
    expect(waiting.tasks[0]?.status).toBe('waiting');
    expect((await messagesOf(started.conversationId)).at(-1)?.content).toContain('Train or plane?');
    // Another user can neither see nor answer it.
    expect(
      (await api('POST', `/v1/missions/${started.id}/answer`, { text: 'Plane' }, otherKey)).status,
    ).toBe(404);
    // A question named by an id that is malformed, or that the mission does not have.
    const answerTo = (questionId: string) =>
      api('POST', `/v1/missions/${started.id}/answer`, { text: 'Plane', questionId });
    expect((await answerTo('not-an-id')).status).toBe(400);
    expect((await answerTo(randomUUID())).status).toBe(404);
    expect(waiting.questions.map((question) => question.id)).toEqual([waiting.question.id]);

    const response = await fixture.chat(key, {
      message: 'The train, please.',
      conversationId: started.conversationId,
    });

    expect(response.status).toBe(200);
    const turn = ChatResponse.parse(await response.json());
    expect(turn.reply.content).toBe(
      'I passed your answer on to task 1 “Book the transport” of the mission “Book the trip to Oslo”.',
    );
    const ended = await waitFor(started.id, ['completed']);
    expect(ended.tasks[0]?.result).toBe('Booked by {"answer":"The train, please."}');
    expect(ended.report).toContain('Booked as you asked.');
    // Nothing waits any more.
    expect((await api('POST', `/v1/missions/${started.id}/answer`, { text: 'Again' })).status).toBe(
      409,
    );
    expect((await answerTo(waiting.question.id)).status).toBe(409);
  });
});
