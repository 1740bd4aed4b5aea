import { randomUUID } from 'node:crypto';
import { type Bus, ensureUserEventStream, ensureWorkQueue, type Worker } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  MISSIONS_STREAM,
  missionWork,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
  orchestratorRunsGet,
  type ToolDescriptor,
  type ToolsInvokeRequest,
  type ToolsInvokeResponse,
  type TurnEvent,
  TurnEvent as TurnEventSchema,
  TurnSubmitRequest,
  toolsInvoke,
  toolsList,
  turnEventSubject,
  workspaceFileUrl,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { type FakeLlmRequest, type FakeReply, sentMessages, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MissionDeps } from '../missions/mission-service';
import { startMissionWorker } from '../missions/mission-worker';
import { registerMissionHandlers } from '../missions/missions-handlers';
import { registerRunHandlers } from '../runs-handlers';
import type { AgentTool } from '../tools/agent-tool';
import { startRemoteTools } from '../tools/remote-tools';
import { startTurnFixture, type TurnFixture } from '../turn-fixture';
import type { LoopSettings } from './agent-loop';
import { runTurn } from './run-turn';
import { submitTurn } from './submit-turn';

// Calls of the tools service's tools from real turns and a real mission task (memory and the
// model gateway as their own processes, the test kit's fake LLM behind them), with a stand-in
// tools service on the real NATS answering tools.list and tools.invoke.

// The loop's TOOL_TIMEOUT_MS here: short, so that a tool answering in TOOL_ANSWER_MS outlives it.
const TOOL_TIMEOUT_MS = 300;
const TOOL_ANSWER_MS = 700;

const TOOLS: ToolDescriptor[] = [
  tool('run_code', 5_000),
  tool('slow_fetch', undefined),
  tool('long_job', 600_000),
];

let turns: TurnFixture;
let toolsService: Bus;
let tools: AgentTool[];
let missionWorker: Worker;
const invocations: ToolsInvokeRequest[] = [];
// What the stand-in answers each run_code call with: the files it "wrote".
let runCodeResult: (request: ToolsInvokeRequest) => ToolsInvokeResponse['result'] = () => ({});

function tool(name: string, timeoutMs: number | undefined): ToolDescriptor {
  return {
    name,
    description: `the ${name} tool`,
    risk: 'safe',
    inputSchema: { type: 'object', properties: { code: { type: 'string' } } },
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
}

beforeAll(async () => {
  turns = await startTurnFixture();
  toolsService = await connectTestBus(turns.fixture.namespace);
  toolsService.serve(toolsList, async () => ({ tools: TOOLS }));
  toolsService.serve(toolsInvoke, async (request) => {
    invocations.push(request);
    await new Promise((resolve) => setTimeout(resolve, TOOL_ANSWER_MS));
    return { result: request.name === 'run_code' ? runCodeResult(request) : { done: true } };
  });
  await toolsService.nc.flush();
  const logger = createLogger('orchestrator-test', 'silent');
  const remote = await startRemoteTools(turns.fixture.bus, {
    logger,
    approvalTools: new Set(),
    refreshMs: 60_000,
  });
  tools = remote.withBuiltIn([]);
  registerRunHandlers(turns.fixture.bus, turns.fixture.db.pool);
  const queue = {
    stream: MISSIONS_STREAM,
    consumer: 'orchestrator-missions',
    ackWaitMs: 30_000,
    maxDeliver: 2,
    maxInFlight: 2,
  };
  await ensureWorkQueue(turns.fixture.bus, missionWork, queue);
  await ensureUserEventStream(turns.fixture.bus);
  const missionDeps: MissionDeps = {
    bus: turns.fixture.bus,
    pool: turns.fixture.db.pool,
    logger,
    tools,
    loop: loopSettings({ turnDeadlineMs: 20_000 }),
    defaults: { maxTokens: 100_000, maxCostUsd: 1 },
    maxDeliver: queue.maxDeliver,
    leaseMs: 30_000,
    questionTtlMs: 60_000,
  };
  registerMissionHandlers(missionDeps);
  missionWorker = await startMissionWorker(missionDeps, queue);
  await turns.fixture.bus.nc.flush();
});

afterAll(async () => {
  await missionWorker?.stop();
  await toolsService?.close();
  await turns?.stop();
});

function loopSettings(overrides: Partial<LoopSettings> = {}): LoopSettings {
  return { ...turns.deps.loop, toolTimeoutMs: TOOL_TIMEOUT_MS, ...overrides };
}

// The model calls `name` once, then answers with what it got back.
function callOnce(name: string): (request: FakeLlmRequest) => FakeReply {
  return (request) => {
    const hasTools = JSON.stringify(request.body).includes(`"${name}"`);
    const hasResult = sentMessages(request).some((message) => message.role === 'tool');
    return hasTools && !hasResult
      ? { toolCalls: [{ id: `call-${name}`, name, arguments: { code: 'print(1)' } }] }
      : { content: 'Done.' };
  };
}

// A message answered by a real turn, with the given loop settings; the turn's events and the
// stored run (GET /v1/runs/{id}'s subject) come back.
async function runMessage(message: string, overrides: Partial<LoopSettings> = {}) {
  const userId = randomUUID();
  const request = TurnSubmitRequest.parse({ userId, turnId: randomUUID(), message });
  const deps = { ...turns.deps, tools, loop: loopSettings(overrides) };
  const events: TurnEvent[] = [];
  const subscription = turns.fixture.client.subscribe(
    turnEventSubject(request.turnId),
    TurnEventSchema,
    (event) => events.push(event),
  );
  await turns.fixture.client.nc.flush();
  const submitted = await submitTurn(deps, request);
  const outcome = await runTurn(deps, { ...submitted, userId, message, stream: true }, 1);
  expect(outcome).toEqual({ type: 'ack' });
  await waitFor(() => events.some((event) => event.type === 'done'), { what: 'the turn to end' });
  subscription.unsubscribe();
  const { run } = await turns.fixture.client.request(orchestratorRunsGet, {
    userId,
    id: submitted.runId,
  });
  const finished = events.find((event) => event.type === 'tool_finished');
  return { submitted, finished, run, invocation: invocations.at(-1) };
}

describe("the tools service's tools in a turn", { timeout: 60_000 }, () => {
  it("passes on the files a tool wrote, in tool_finished and in the run's step", async () => {
    runCodeResult = (request) => {
      const written: Record<string, string | number>[] = [
        {
          path: 'plots/chart.png',
          size: 1_234,
          mediaType: 'image/png',
          url: workspaceFileUrl('conversation', request.conversationId ?? '', 'plots/chart.png'),
        },
        // A url that is not the API's own address of that file is never passed on.
        { path: 'page.html', size: 10, mediaType: 'text/html', url: 'https://evil.example/x' },
        { path: 'notes.txt', size: 5, mediaType: 'text/plain' },
      ];
      return { stdout: '', stderr: '', exitCode: 0, files: written };
    };
    turns.fake.onChat(callOnce('run_code'));

    const { submitted, finished, run } = await runMessage('Draw me a chart');

    const files = [
      {
        path: 'plots/chart.png',
        size: 1_234,
        mediaType: 'image/png',
        url: `/v1/workspaces/conversation/${submitted.conversationId}/files/plots/chart.png`,
      },
      { path: 'notes.txt', size: 5, mediaType: 'text/plain' },
    ];
    expect(finished).toMatchObject({ name: 'run_code', isError: false, files });
    const step = run.steps.find((candidate) => candidate.kind === 'tool');
    expect(step).toMatchObject({ name: 'run_code', status: 'ok', output: { files } });
  });

  it('records no files for a result that carries none', async () => {
    turns.fake.onChat(callOnce('slow_fetch'));

    const { finished, run } = await runMessage('Fetch it', { toolTimeoutMs: 5_000 });

    expect(finished).toMatchObject({ name: 'slow_fetch', isError: false });
    expect(finished).not.toHaveProperty('files');
    expect(run.steps.find((step) => step.kind === 'tool')?.output).not.toHaveProperty('files');
  });

  it('gives a tool the time it declares, past TOOL_TIMEOUT_MS', async () => {
    runCodeResult = () => ({ stdout: '1\n', stderr: '', exitCode: 0 });
    turns.fake.onChat(callOnce('run_code'));

    const { finished, invocation } = await runMessage('Run it');

    expect(finished).toMatchObject({ name: 'run_code', isError: false });
    expect(finished?.type === 'tool_finished' && finished.durationMs).toBeGreaterThanOrEqual(
      TOOL_ANSWER_MS,
    );
    // Its 5 s, less what the tools service's own timeout reply needs to arrive in.
    expect(invocation).toMatchObject({ name: 'run_code', timeoutMs: 4_750 });
    expect(invocation).not.toHaveProperty('missionId');
  });

  it('stops a tool that declares no time of its own at TOOL_TIMEOUT_MS', async () => {
    turns.fake.onChat(callOnce('slow_fetch'));

    const { finished, run, invocation } = await runMessage('Fetch it slowly');

    expect(finished).toMatchObject({ name: 'slow_fetch', isError: true });
    // Given up on at its time (by the loop or by the bus request, whichever fires first), not
    // when the tool answered.
    const step = run.steps.find((candidate) => candidate.kind === 'tool');
    expect(step).toMatchObject({ status: 'error', error: expect.stringMatching(/time|longer/) });
    expect(step?.durationMs).toBeLessThan(TOOL_ANSWER_MS);
    expect(invocation?.timeoutMs).toBeLessThan(TOOL_TIMEOUT_MS);
  });

  it("cuts a tool's declared time at the turn's deadline", async () => {
    turns.fake.onChat(callOnce('long_job'));

    const { finished, invocation } = await runMessage('Start the long job', {
      turnDeadlineMs: 15_000,
    });

    expect(finished).toMatchObject({ name: 'long_job', isError: false });
    expect(invocation?.name).toBe('long_job');
    expect(invocation?.timeoutMs).toBeLessThan(15_000);
  });
});

describe("a mission task's tool calls", { timeout: 60_000 }, () => {
  it('carry the mission id, and its files are in the task run', async () => {
    const userId = randomUUID();
    runCodeResult = (request) => ({
      stdout: '',
      stderr: '',
      exitCode: 0,
      files: [
        {
          path: 'table.csv',
          size: 42,
          mediaType: 'text/csv',
          url: workspaceFileUrl('mission', request.missionId ?? '', 'table.csv'),
        },
      ],
    });
    turns.fake.onChat(callOnce('run_code'));

    const { mission } = await turns.fixture.client.request(orchestratorMissionsCreate, {
      userId,
      objective: 'Tabulate the offers',
      tasks: [{ title: 'Make the table', brief: 'Write table.csv.', tools: ['run_code'] }],
    });
    const ended = await waitFor(
      async () => {
        const { mission: stored } = await turns.fixture.client.request(orchestratorMissionsGet, {
          userId,
          id: mission.id,
        });
        return stored.finishedAt ? stored : undefined;
      },
      { timeoutMs: 30_000, what: 'the mission to end' },
    );

    const invocation = invocations.find((request) => request.userId === userId);
    expect(invocation).toMatchObject({
      name: 'run_code',
      missionId: mission.id,
      conversationId: mission.conversationId,
    });
    const runId = ended.tasks[0]?.runId ?? '';
    const { run } = await turns.fixture.client.request(orchestratorRunsGet, { userId, id: runId });
    expect(run.steps.find((step) => step.kind === 'tool')?.output).toMatchObject({
      files: [
        {
          path: 'table.csv',
          url: `/v1/workspaces/mission/${mission.id}/files/table.csv`,
        },
      ],
    });
  });
});
