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

// A chat message through a real turn, with the hook main.ts gives the turn worker.
async function chat(userId: string, conversationId: string, message: string) {
  const request = TurnSubmitRequest.parse({
    userId,
    conversationId,
    turnId: randomUUID(),
    message,
  });
  const deps = {
    ...turns.deps,
    answerPendingQuestion: (run: { userId: string; conversationId: string }, text: string) =>
      answerPendingQuestion(missions, run, text),
  };
  const events: TurnEvent[] = [];
  const subscription = turns.fixture.client.subscribe(
    turnEventSubject(request.turnId),
    TurnEventSchema,
    (event) => events.push(event),
  );
  await turns.fixture.client.nc.flush();
  const submitted = await submitTurn(deps, request);
  await runTurn(deps, { ...submitted, userId, message }, 1);
  const done = await waitFor(
    () => events.find((event) => event.type === 'done' || event.type === 'failed'),
    { what: 'the turn to end' },
  );
  subscription.unsubscribe();
  return done;
}

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
    expect(posted?.content).toContain(QUESTION);

    const done = await chat(userId, started.conversationId, 'The train, please.');

    expect(done).toMatchObject({
      type: 'done',
      reply: { content: 'I passed your answer on to the mission “Plan the trip to Bergen”.' },
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
        { userId, conversationId: started.conversationId },
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
});
