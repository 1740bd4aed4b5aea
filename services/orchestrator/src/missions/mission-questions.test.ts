import { randomUUID } from 'node:crypto';
import {
  type EventReader,
  ensureWorkQueue,
  readEvents,
  type Worker,
  type WorkQueueOptions,
} from '@jarvis/bus';
import {
  MISSIONS_STREAM,
  type MissionDetail,
  memoryFilesRead,
  memoryMessagesList,
  missionWork,
  orchestratorMissionsAnswer,
  orchestratorMissionsCancel,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
  type TurnEvent,
  TurnEvent as TurnEventSchema,
  TurnSubmitRequest,
  turnEventSubject,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type FakeLlmRequest, type FakeReply, sentMessages, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTurn } from '../services/run-turn';
import { submitTurn } from '../services/submit-turn';
import type { AgentTool } from '../tools/agent-tool';
import { startTurnFixture, type TurnFixture } from '../turn-fixture';
import { answerPendingQuestion, startQuestionSweeper } from './mission-questions';
import type { MissionDeps } from './mission-service';
import { startMissionWorker } from './mission-worker';
import { registerMissionHandlers } from './missions-handlers';

// A mission's task asks its user a question (ask_user) and goes on with the answer: real turns
// and a real mission worker in the test process, memory and the model gateway as their own
// processes, the test kit's fake LLM behind the gateway.

let turns: TurnFixture;
let worker: Worker;
let missions: MissionDeps;
let sweeper: { stop(): void };
// A tool that is safe but for the calls its arguments make risky (as a write under skills/ is).
const guardedCalls: unknown[] = [];
const guarded: AgentTool = {
  definition: {
    name: 'file_write',
    description: 'writes a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
  },
  risk: 'safe',
  riskOf: () => 'risky',
  async run(args) {
    guardedCalls.push(args);
    return { written: true };
  },
};

const queue: WorkQueueOptions = {
  stream: MISSIONS_STREAM,
  consumer: 'orchestrator-missions',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 2,
};

beforeAll(async () => {
  turns = await startTurnFixture();
  await ensureWorkQueue(turns.fixture.bus, missionWork, queue);
  missions = {
    bus: turns.fixture.bus,
    pool: turns.fixture.db.pool,
    logger: createLogger('orchestrator-test', 'silent'),
    tools: [guarded],
    loop: { ...turns.deps.loop, turnDeadlineMs: 20_000 },
    defaults: { maxTokens: 100_000, maxCostUsd: 1 },
    maxDeliver: queue.maxDeliver,
    leaseMs: 30_000,
    questionTtlMs: 3_600_000,
  };
  registerMissionHandlers(missions);
  worker = await startMissionWorker(missions, queue);
  sweeper = startQuestionSweeper(missions, 200);
  await turns.fixture.bus.nc.flush();
});

afterAll(async () => {
  sweeper?.stop();
  await worker?.stop();
  await turns?.stop();
});

const QUESTION = 'Do you prefer the train or the plane?';
const LESSON = 'What worked: asking which transport the user prefers.';

// The task asks once, then reports what it got back; the report repeats the task's result, and
// the lessons note says one thing; a chat turn (which no test here should reach the model)
// answers plainly.
function missionModel(request: FakeLlmRequest): FakeReply {
  const messages = sentMessages(request);
  const system = messages[0]?.content ?? '';
  if (system.includes('You keep the lessons')) return { content: LESSON };
  if (system.includes('Write the report of a mission')) {
    return { content: `Report: ${messages.at(-1)?.content.split('\n').at(-1)}` };
  }
  if (!system.includes('one task of a mission')) return { content: 'A chat answer.' };
  const answer = messages.find((message) => message.role === 'tool');
  if (system.includes('as a skill')) {
    return answer
      ? { content: `Write refused: ${answer.content}` }
      : {
          toolCalls: [{ id: 'call-write', name: 'file_write', arguments: { path: 'skills/x.md' } }],
        };
  }
  if (!answer) {
    return { toolCalls: [{ id: 'call-ask', name: 'ask_user', arguments: { question: QUESTION } }] };
  }
  return { content: `Travel decided from ${answer.content}` };
}

async function startMission(
  userId: string,
  objective = 'Plan the trip to Bergen',
): Promise<MissionDetail> {
  const { mission } = await turns.fixture.client.request(orchestratorMissionsCreate, {
    userId,
    objective,
    tasks: [{ title: 'Choose the transport', brief: 'Pick train or plane for the trip.' }],
    userTimeZone: 'Europe/Oslo',
  });
  return mission;
}

async function getMission(userId: string, id: string): Promise<MissionDetail> {
  return (await turns.fixture.client.request(orchestratorMissionsGet, { userId, id })).mission;
}

async function waitForQuestion(userId: string, id: string): Promise<MissionDetail> {
  return waitFor(
    async () => {
      const mission = await getMission(userId, id);
      return mission.question ? mission : undefined;
    },
    { timeoutMs: 20_000, what: 'the task to ask its question' },
  );
}

async function waitForEnd(userId: string, id: string): Promise<MissionDetail> {
  return waitFor(
    async () => {
      const mission = await getMission(userId, id);
      return mission.status === 'completed' || mission.status === 'failed' ? mission : undefined;
    },
    { timeoutMs: 20_000, what: 'the mission to end' },
  );
}

// The hook main.ts gives the turn worker.
const answering = (run: { userId: string; conversationId: string; turnId: string }, text: string) =>
  answerPendingQuestion(missions, run, text);

// Runs a turn and answers the event it ended with.
async function followTurn(turnId: string, run: () => Promise<unknown>) {
  const events: TurnEvent[] = [];
  const subscription = turns.fixture.client.subscribe(
    turnEventSubject(turnId),
    TurnEventSchema,
    (event) => events.push(event),
  );
  await turns.fixture.client.nc.flush();
  await run();
  const done = await waitFor(
    () => events.find((event) => event.type === 'done' || event.type === 'failed'),
    { what: 'the turn to end' },
  );
  subscription.unsubscribe();
  return done;
}

// A chat message through a real turn.
async function chat(userId: string, conversationId: string, message: string) {
  const request = TurnSubmitRequest.parse({
    userId,
    conversationId,
    turnId: randomUUID(),
    message,
  });
  const deps = { ...turns.deps, answerPendingQuestion: answering };
  return followTurn(request.turnId, async () => {
    const submitted = await submitTurn(deps, request);
    await runTurn(deps, { ...submitted, userId, message }, 1);
  });
}

// Two tasks side by side, each asking its own question.
const TWO_TASKS = [
  { title: 'Book the hotel', brief: 'Find a hotel in Bergen.', question: 'Which hotel?' },
  { title: 'Book the train', brief: 'Find a train to Bergen.', question: 'Which train?' },
];

function twoTaskModel(request: FakeLlmRequest): FakeReply {
  const messages = sentMessages(request);
  const system = messages[0]?.content ?? '';
  const task = TWO_TASKS.find((one) => system.includes(`: ${one.title}\n`));
  if (!system.includes('one task of a mission') || !task) return missionModel(request);
  const answer = messages.find((message) => message.role === 'tool');
  if (!answer) {
    return {
      toolCalls: [{ id: 'call-ask', name: 'ask_user', arguments: { question: task.question } }],
    };
  }
  return { content: `${task.title}: ${answer.content}` };
}

async function startTwoTasks(userId: string): Promise<MissionDetail> {
  const { mission } = await turns.fixture.client.request(orchestratorMissionsCreate, {
    userId,
    objective: 'Book the trip to Bergen',
    tasks: TWO_TASKS.map(({ title, brief }) => ({ title, brief })),
  });
  return waitFor(
    async () => {
      const waiting = await getMission(userId, mission.id);
      return waiting.questions.length === 2 ? waiting : undefined;
    },
    { timeoutMs: 20_000, what: 'both tasks to ask' },
  );
}

const noteFor = (mission: MissionDetail, taskId: string | undefined) => {
  const task = mission.tasks.find((one) => one.id === taskId);
  return `I passed your answer on to task ${task?.number} “${task?.title}” of the mission “${mission.objective}”.`;
};

describe("a mission task's question", { timeout: 60_000 }, () => {
  it('waits for the answer given in the chat, then the mission goes on and reports', async () => {
    turns.fake.onChat(missionModel);
    const userId = randomUUID();
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

    const started = await startMission(userId);
    const waiting = await waitForQuestion(userId, started.id);

    expect(waiting.status).toBe('running');
    expect(waiting.tasks[0]?.status).toBe('waiting');
    expect(waiting.question).toMatchObject({ taskId: waiting.tasks[0]?.id, text: QUESTION });
    // The task was told the time in the user's zone.
    const taskPrompt = turns.fake
      .chatRequests()
      .map((request) => sentMessages(request)[0]?.content ?? '')
      .find((system) => system.includes('one task of a mission'));
    expect(taskPrompt).toContain('(Europe/Oslo, GMT+');
    expect(taskPrompt).not.toContain('do not ask questions');
    // It saw the last messages of the mission's conversation (the mission's start note).
    expect(taskPrompt).toContain('The last messages of the conversation this mission belongs to');
    expect(taskPrompt).toContain('I started a mission: Plan the trip to Bergen');
    // The question is in the conversation and on the user's events.
    const asked = await waitFor(
      () =>
        events.find(
          (event): event is Extract<UserEvent, { type: 'mission_question' }> =>
            event.type === 'mission_question',
        ),
      { what: 'the question event' },
    );
    expect(asked.question).toMatchObject({ id: waiting.question?.id, text: QUESTION });
    const { messages } = await turns.fixture.client.request(memoryMessagesList, {
      userId,
      conversationId: started.conversationId,
    });
    const posted = messages.find((message) => message.id === asked.question.messageId);
    expect(posted?.role).toBe('assistant');
    expect(posted?.content).toBe(
      `Task 1 “Choose the transport” of the mission “Plan the trip to Bergen” asks:\n${QUESTION}\n\nYour next message here is taken as the answer.`,
    );
    expect(waiting.questions).toEqual([waiting.question]);

    const done = await chat(userId, started.conversationId, 'The train, please.');

    expect(done).toMatchObject({
      type: 'done',
      reply: {
        content:
          'I passed your answer on to task 1 “Choose the transport” of the mission “Plan the trip to Bergen”.',
      },
    });
    const ended = await waitForEnd(userId, started.id);
    await reader.stop();
    expect(ended.status).toBe('completed');
    expect(ended.question).toBeNull();
    expect(ended.tasks[0]?.result).toBe('Travel decided from {"answer":"The train, please."}');
    expect(ended.report).toContain('Travel decided from {"answer":"The train, please."}');
    // The answer went to the task, not to the chat model.
    const chatTurns = turns.fake
      .chatRequests()
      .filter((request) =>
        sentMessages(request)[0]?.content.startsWith('You are Jarvis, a personal assistant in one'),
      );
    expect(chatTurns).toHaveLength(0);

    // Its lessons are kept as a memory file, and a later mission with a like objective is told
    // them.
    const path = `missions/lessons/${started.id}.md`;
    const lessons = await waitFor(
      () =>
        turns.fixture.client.request(memoryFilesRead, { userId, path }).then(
          ({ file }) => file,
          () => undefined,
        ),
      { what: 'the lessons note' },
    );
    expect(lessons.content).toContain('outcome: completed');
    expect(lessons.content).toContain('# Lessons of the mission "Plan the trip to Bergen"');
    expect(lessons.content).toContain(LESSON);
    const again = await startMission(userId, 'Plan the trip to Bergen for the spring');
    await waitForQuestion(userId, again.id);
    const secondPrompt = turns.fake
      .chatRequests()
      .map((request) => sentMessages(request)[0]?.content ?? '')
      .findLast(
        (system) => system.includes('one task of a mission') && system.includes('for the spring'),
      );
    expect(secondPrompt).toContain(LESSON);
    await turns.fixture.client.request(orchestratorMissionsCancel, { userId, id: again.id });
  });

  it('is answered through the API; with none waiting, answering is a conflict', async () => {
    turns.fake.onChat(missionModel);
    const userId = randomUUID();
    const started = await startMission(userId);
    await waitForQuestion(userId, started.id);

    const { mission } = await turns.fixture.client.request(orchestratorMissionsAnswer, {
      userId,
      id: started.id,
      text: 'Plane.',
    });

    expect(mission.question).toBeNull();
    expect(mission.questions).toEqual([]);
    const ended = await waitForEnd(userId, started.id);
    expect(ended.tasks[0]?.result).toBe('Travel decided from {"answer":"Plane."}');
    await expect(
      turns.fixture.client.request(orchestratorMissionsAnswer, {
        userId,
        id: started.id,
        text: 'Again.',
      }),
    ).rejects.toMatchObject({ code: 'conflict' });
    // Another user's mission is not found.
    await expect(
      turns.fixture.client.request(orchestratorMissionsAnswer, {
        userId: randomUUID(),
        id: started.id,
        text: 'Mine.',
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('expires unanswered, and the task goes on without an answer', async () => {
    turns.fake.onChat(missionModel);
    const userId = randomUUID();
    const started = await startMission(userId);
    const waiting = await waitForQuestion(userId, started.id);

    // Its day has passed.
    await turns.fixture.db.pool.query(
      `UPDATE orchestrator.mission_questions SET expires_at = now() - interval '1 second'
       WHERE id = $1`,
      [waiting.question?.id],
    );

    const ended = await waitForEnd(userId, started.id);
    expect(ended.status).toBe('completed');
    expect(ended.tasks[0]?.result).toBe('Travel decided from {"answer":null,"expired":true}');
    // A chat message after it is an ordinary message again.
    expect(
      await answerPendingQuestion(
        missions,
        { userId, conversationId: started.conversationId, turnId: randomUUID() },
        'Too late.',
      ),
    ).toBeUndefined();
  });

  it('refuses a call that needs approval, since nobody is there to give it', async () => {
    turns.fake.onChat(missionModel);
    const userId = randomUUID();
    const started = await startMission(userId, 'Save the packing list as a skill');

    const ended = await waitForEnd(userId, started.id);

    expect(ended.status).toBe('completed');
    expect(ended.tasks[0]?.result).toContain('Write refused: {"error":"The user denied this call.');
    expect(guardedCalls).toEqual([]);
  });

  it('lists every waiting question, and answers each by its id', async () => {
    turns.fake.onChat(twoTaskModel);
    const userId = randomUUID();
    const waiting = await startTwoTasks(userId);
    const [first, second] = waiting.questions;
    if (!first || !second) throw new Error('two questions expected');

    expect(waiting.question).toEqual(first);
    expect(first.askedAt <= second.askedAt).toBe(true);
    expect(new Set(waiting.questions.map((question) => question.text))).toEqual(
      new Set(TWO_TASKS.map((task) => task.question)),
    );
    // The later question says that a chat message answers the earlier one first.
    const { messages } = await turns.fixture.client.request(memoryMessagesList, {
      userId,
      conversationId: waiting.conversationId,
    });
    const secondTask = waiting.tasks.find((task) => task.id === second.taskId);
    expect(
      messages.find((message) => message.content.includes(`\n${second.text}\n`))?.content,
    ).toBe(
      `Task ${secondTask?.number} “${secondTask?.title}” of the mission “Book the trip to Bergen” asks:\n${second.text}\n\nAn earlier question waits: your next message here answers that one first (or answer this one on the mission’s page).`,
    );

    // The later one, by its id: the earlier one still waits.
    const { mission } = await turns.fixture.client.request(orchestratorMissionsAnswer, {
      userId,
      id: waiting.id,
      text: 'The Grand.',
      questionId: second.id,
    });
    expect(mission.questions).toEqual([first]);
    expect(mission.question).toEqual(first);
    // Answered already: a conflict; a question of another mission, or none: not found.
    await expect(
      turns.fixture.client.request(orchestratorMissionsAnswer, {
        userId,
        id: waiting.id,
        text: 'Again.',
        questionId: second.id,
      }),
    ).rejects.toMatchObject({ code: 'conflict' });
    const other = await startMission(userId, 'Plan the trip to Oslo');
    const otherQuestion = (await waitForQuestion(userId, other.id)).question;
    await expect(
      turns.fixture.client.request(orchestratorMissionsAnswer, {
        userId,
        id: waiting.id,
        text: 'Wrong mission.',
        questionId: otherQuestion?.id,
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      turns.fixture.client.request(orchestratorMissionsAnswer, {
        userId,
        id: waiting.id,
        text: 'Nothing.',
        questionId: randomUUID(),
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await turns.fixture.client.request(orchestratorMissionsCancel, { userId, id: other.id });

    // A chat message answers the one left, and says which task it went to.
    const done = await chat(userId, waiting.conversationId, 'The 8:15.');
    expect(done).toMatchObject({
      type: 'done',
      reply: { content: noteFor(waiting, first.taskId) },
    });

    const ended = await waitForEnd(userId, waiting.id);
    const resultOf = (taskId: string) => ended.tasks.find((task) => task.id === taskId)?.result;
    expect(resultOf(second.taskId)).toBe(`${secondTask?.title}: {"answer":"The Grand."}`);
    const firstTask = waiting.tasks.find((task) => task.id === first.taskId);
    expect(resultOf(first.taskId)).toBe(`${firstTask?.title}: {"answer":"The 8:15."}`);
    expect(ended.questions).toEqual([]);
  });

  it('takes a message as one answer, however often its turn runs', async () => {
    turns.fake.onChat(twoTaskModel);
    const userId = randomUUID();
    const waiting = await startTwoTasks(userId);
    const [first, second] = waiting.questions;
    const message = 'Tuesday.';
    const request = TurnSubmitRequest.parse({
      userId,
      conversationId: waiting.conversationId,
      turnId: randomUUID(),
      message,
    });
    const submitted = await submitTurn(turns.deps, request);
    const turn = { ...submitted, userId, message };
    // The first attempt answers, and its process dies before the reply is stored.
    const crashing = {
      ...turns.deps,
      answerPendingQuestion: async (
        run: { userId: string; conversationId: string; turnId: string },
        text: string,
      ) => {
        await answering(run, text);
        throw new Error('the process died');
      },
    };
    expect(await runTurn(crashing, turn, 1)).toMatchObject({ type: 'retry' });
    expect((await getMission(userId, waiting.id)).questions).toEqual([second]);

    // Redelivered, the same turn runs again: it replies for the question it answered, and the
    // other question still waits.
    const done = await followTurn(request.turnId, () =>
      runTurn({ ...turns.deps, answerPendingQuestion: answering }, turn, 2),
    );

    expect(done).toMatchObject({
      type: 'done',
      reply: { content: noteFor(waiting, first?.taskId) },
    });
    expect((await getMission(userId, waiting.id)).questions).toEqual([second]);
    const { rows } = await turns.fixture.db.pool.query(
      `SELECT id, status, answer, answered_by_turn FROM orchestrator.mission_questions
       WHERE mission_id = $1 ORDER BY created_at, id`,
      [waiting.id],
    );
    expect(rows).toEqual([
      { id: first?.id, status: 'answered', answer: message, answered_by_turn: request.turnId },
      { id: second?.id, status: 'pending', answer: null, answered_by_turn: null },
    ]);
    await turns.fixture.client.request(orchestratorMissionsCancel, { userId, id: waiting.id });
  });
});
