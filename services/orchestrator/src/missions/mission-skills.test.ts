import { randomUUID } from 'node:crypto';
import { ensureWorkQueue, type Worker, type WorkQueueOptions } from '@jarvis/bus';
import {
  MISSIONS_STREAM,
  type MissionDetail,
  type MissionsCreateRequest,
  memoryFilesRead,
  memoryFilesWrite,
  missionWork,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type FakeLlmRequest, type FakeReply, sentMessages, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTools } from '../tools/memory-tools';
import { startTurnFixture, type TurnFixture } from '../turn-fixture';
import type { MissionDeps } from './mission-service';
import { startMissionWorker } from './mission-worker';
import { registerMissionHandlers } from './missions-handlers';

// The skills a mission's task may use: real memory tools, a real mission worker in the test
// process, memory and the model gateway as their own processes, the test kit's fake LLM behind
// the gateway. The user has two skills; a task is given one of them, or none.

let turns: TurnFixture;
let worker: Worker;

const queue: WorkQueueOptions = {
  stream: MISSIONS_STREAM,
  consumer: 'orchestrator-missions',
  ackWaitMs: 30_000,
  maxDeliver: 2,
  maxInFlight: 2,
};

const TRIP_LINE = '- trip-planning: How I like trips planned';
const REVIEW_LINE = '- weekly-review: My Friday review of the week';
const TRIP_BODY = 'No flights before 9 in the morning.';

beforeAll(async () => {
  turns = await startTurnFixture();
  await ensureWorkQueue(turns.fixture.bus, missionWork, queue);
  const missions: MissionDeps = {
    bus: turns.fixture.bus,
    pool: turns.fixture.db.pool,
    logger: createLogger('orchestrator-test', 'silent'),
    tools: createMemoryTools(turns.fixture.bus, new Set()),
    loop: { ...turns.deps.loop, turnDeadlineMs: 20_000 },
    defaults: { maxTokens: 100_000, maxCostUsd: 1 },
    maxDeliver: queue.maxDeliver,
    leaseMs: 30_000,
    questionTtlMs: 3_600_000,
  };
  registerMissionHandlers(missions);
  worker = await startMissionWorker(missions, queue);
  await turns.fixture.bus.nc.flush();
});

afterAll(async () => {
  await worker?.stop();
  await turns?.stop();
});

async function writeFile(userId: string, path: string, content: string) {
  await turns.fixture.client.request(memoryFilesWrite, { userId, path, content });
}

// A user with the skills trip-planning (written twice: version 2 is the current one) and
// weekly-review, and a note written twice.
async function userWithSkills(): Promise<string> {
  const userId = randomUUID();
  await writeFile(userId, 'notes/budget.md', 'Budget: 500 EUR.');
  await writeFile(userId, 'notes/budget.md', 'Budget: unknown.');
  const trip = (rule: string) =>
    `---\nname: trip-planning\ndescription: How I like trips planned\n---\n${rule}\n`;
  await writeFile(userId, 'skills/trip-planning.md', trip('Fly whenever.'));
  await writeFile(userId, 'skills/trip-planning.md', trip(TRIP_BODY));
  await writeFile(
    userId,
    'skills/weekly-review.md',
    '---\nname: weekly-review\ndescription: My Friday review of the week\n---\nList what got done.\n',
  );
  return userId;
}

async function create(request: MissionsCreateRequest): Promise<MissionDetail> {
  return (await turns.fixture.client.request(orchestratorMissionsCreate, request)).mission;
}

async function waitForEnd(userId: string, id: string): Promise<MissionDetail> {
  return waitFor(
    async () => {
      const { mission } = await turns.fixture.client.request(orchestratorMissionsGet, {
        userId,
        id,
      });
      return mission.status === 'completed' || mission.status === 'failed' ? mission : undefined;
    },
    { timeoutMs: 30_000, what: 'the mission to end' },
  );
}

const systemOf = (request: FakeLlmRequest | undefined) => sentMessages(request)[0]?.content ?? '';
const taskTitle = (request: FakeLlmRequest) =>
  /Your task \(\d+ of \d+\): (.+)/.exec(systemOf(request))?.[1] ?? '';

// The requests of one task's run, in order, within the user's mission (tasks of other tests'
// missions carry the same titles).
function taskRequests(objective: string, title: string): FakeLlmRequest[] {
  return turns.fake
    .chatRequests()
    .filter(
      (request) =>
        systemOf(request).includes(`The mission: ${objective}`) && taskTitle(request) === title,
    );
}

// A task makes the calls its script lists, one a model call, then answers with every result it
// got back.
function scriptTasks(
  calls: Record<string, { name: string; arguments: Record<string, unknown> }[]>,
) {
  turns.fake.onChat((request): FakeReply => {
    const title = taskTitle(request);
    if (!title) return { content: 'A report.' };
    const results = sentMessages(request).filter((message) => message.role === 'tool');
    const next = calls[title]?.[results.length];
    if (next) {
      return { toolCalls: [{ id: `call-${results.length}`, ...next }] };
    }
    return { content: results.map((result) => result.content).join('\n') };
  });
}

const toolsOffered = (request: FakeLlmRequest | undefined) =>
  ((request?.body as { tools?: { function: { name: string } }[] }).tools ?? []).map(
    (tool) => tool.function.name,
  );

describe("a mission task's skills", { timeout: 60_000 }, () => {
  it('shows a task only the skills it names, and loads only those', async () => {
    const userId = await userWithSkills();
    const objective = `Plan the Bergen trip ${randomUUID()}`;
    scriptTasks({
      'Book the trip': [
        { name: 'skill_load', arguments: { name: 'trip-planning' } },
        { name: 'skill_load', arguments: { name: 'weekly-review' } },
      ],
      'Note the budget': [
        { name: 'skill_load', arguments: { name: 'trip-planning' } },
        // A restore is a change to the skill: nobody is there to approve it.
        {
          name: 'memory_restore',
          arguments: { path: 'skills/trip-planning.md', version: 1 },
        },
        // Another file's restore needs no approval.
        { name: 'memory_restore', arguments: { path: 'notes/budget.md', version: 1 } },
      ],
    });

    const started = await create({
      userId,
      objective,
      tasks: [
        {
          title: 'Book the trip',
          brief: 'Book train and hotel.',
          tools: ['memory_search'],
          skills: ['trip-planning'],
        },
        { title: 'Note the budget', brief: 'Write down what it costs.' },
      ],
    });
    expect(started.tasks.map((task) => task.skills)).toEqual([['trip-planning'], []]);
    const ended = await waitForEnd(userId, started.id);

    expect(ended.status).toBe('completed');
    const [booking, budget] = ended.tasks;
    // The task that names trip-planning sees its line of the index, not the other skill's, and
    // is given skill_load with the one tool it names.
    const booked = taskRequests(objective, 'Book the trip');
    expect(systemOf(booked[0])).toContain(TRIP_LINE);
    expect(systemOf(booked[0])).not.toContain(REVIEW_LINE);
    expect(toolsOffered(booked[0])).toEqual(['memory_search', 'skill_load', 'ask_user']);
    expect(booking?.result).toContain(TRIP_BODY);
    expect(booking?.result).toContain('this task may not use skill weekly-review');
    expect(booking?.result).not.toContain('List what got done.');
    // The task that names none sees no index, and its skill_load loads nothing.
    const budgeted = taskRequests(objective, 'Note the budget');
    expect(systemOf(budgeted[0])).not.toContain('Skills you can load');
    expect(systemOf(budgeted[0])).not.toContain(TRIP_LINE);
    expect(budget?.result).toContain(
      'this task may use no skill (its plan names none), so it may not use skill trip-planning',
    );
    expect(budget?.result).not.toContain(TRIP_BODY);
    expect(budget?.result).toContain('The user denied this call.');
    const { file } = await turns.fixture.client.request(memoryFilesRead, {
      userId,
      path: 'skills/trip-planning.md',
    });
    expect(file).toMatchObject({ version: 2 });
    expect(file.content).toContain(TRIP_BODY);
    const { file: note } = await turns.fixture.client.request(memoryFilesRead, {
      userId,
      path: 'notes/budget.md',
    });
    expect(note).toMatchObject({ version: 3, content: 'Budget: 500 EUR.' });
  });

  it("drops from a model's plan the skills the user does not have", async () => {
    const userId = await userWithSkills();
    const objective = `Plan the Oslo trip ${randomUUID()}`;
    let planPrompt = '';
    turns.fake.onChat((request): FakeReply => {
      const system = systemOf(request);
      if (!system.startsWith('You plan missions')) return { content: 'Done.' };
      planPrompt = system;
      return {
        content: JSON.stringify({
          tasks: [
            {
              title: 'Book the trip',
              brief: 'Book train and hotel.',
              dependsOn: [],
              tools: [],
              skills: ['trip-planning', 'packing-list', 'trip-planning'],
            },
            { title: 'Pack', brief: 'List what to pack.', dependsOn: [], tools: [] },
          ],
        }),
      };
    });

    const started = await create({ userId, objective });
    const ended = await waitForEnd(userId, started.id);

    // The planner chose from the user's index.
    expect(planPrompt).toContain(TRIP_LINE);
    expect(planPrompt).toContain(REVIEW_LINE);
    expect(ended.tasks.map((task) => [task.title, task.skills])).toEqual([
      ['Book the trip', ['trip-planning']],
      ['Pack', []],
    ]);
    expect(systemOf(taskRequests(objective, 'Book the trip')[0])).toContain(TRIP_LINE);
  });

  it('refuses a plan naming a skill the user does not have, and says which', async () => {
    const userId = await userWithSkills();

    await expect(
      create({
        userId,
        objective: 'Pack for the trip',
        tasks: [
          { title: 'Pack', brief: 'List what to pack.', skills: ['trip-planning', 'packing-list'] },
        ],
      }),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message:
        'tasks[].skills: there is no skill named packing-list; your skills are trip-planning, weekly-review',
    });
    // Another user's skills are not this one's.
    await expect(
      create({
        userId: randomUUID(),
        objective: 'Plan a trip',
        tasks: [{ title: 'Plan', brief: 'Plan it.', skills: ['trip-planning'] }],
      }),
    ).rejects.toMatchObject({
      code: 'bad_request',
      message: 'tasks[].skills: there is no skill named trip-planning; you have none',
    });
    const { rows } = await turns.fixture.db.pool.query(
      'SELECT 1 FROM orchestrator.missions WHERE user_id = $1',
      [userId],
    );
    expect(rows).toEqual([]);
  });
});
