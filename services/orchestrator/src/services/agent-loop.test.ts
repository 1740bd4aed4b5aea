import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { type ChatMessage, modelChat, type ToolCall } from '@jarvis/contracts';
import { type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { insertRun } from '../repositories/runs-repository';
import type { AgentTool } from '../tools/agent-tool';
import { createStepRecorder, type LoopDeps, type LoopStart, runAgentLoop } from './agent-loop';

let db: TestDatabase;
let bus: Bus;
let gateway: Bus;
// What the stand-in for model-gateway answers, in order, and the messages it was sent.
const script: { content: string; toolCalls: ToolCall[] }[] = [];
const sent: ChatMessage[][] = [];

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('agent-loop');
  bus = await connectTestBus(namespace);
  gateway = await connectTestBus(namespace);
  gateway.serve(modelChat, async (request) => {
    sent.push(request.messages);
    const next = script.shift() ?? { content: 'Done.', toolCalls: [] };
    return {
      requestId: request.requestId ?? randomUUID(),
      ...next,
      provider: 'openai',
      model: 'fake-gpt',
      finishReason: next.toolCalls.length > 0 ? ('tool_calls' as const) : ('stop' as const),
      usage: { inputTokens: 10, outputTokens: 2 },
      costUsd: 0,
      attempts: [],
    };
  });
  await gateway.nc.flush();
});

afterAll(async () => {
  await gateway?.close();
  await bus?.close();
  await db?.stop();
});

async function newRun(): Promise<{ id: string; userId: string }> {
  const userId = randomUUID();
  const run = await insertRun(db.pool, {
    id: randomUUID(),
    turnId: randomUUID(),
    userId,
    conversationId: randomUUID(),
    userMessageId: randomUUID(),
    userMessageAt: new Date().toISOString(),
    userMessageSeq: 1,
    traceId: undefined,
    timeZone: undefined,
  });
  return { id: run.id, userId };
}

function step(name: string) {
  return {
    kind: 'tool' as const,
    name,
    status: 'ok' as const,
    startedAt: new Date(),
    durationMs: 3,
  };
}

async function storedSteps(runId: string): Promise<{ seq: number; name: string }[]> {
  const { rows } = await db.pool.query<{ seq: number; name: string }>(
    'SELECT seq, name FROM orchestrator.run_steps WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
  return rows;
}

describe('createStepRecorder', () => {
  it('stores every step recorded before a flush, numbered in the order they were recorded', async () => {
    const run = await newRun();
    const recorder = createStepRecorder(db.pool, { runId: run.id, userId: run.userId, attempt: 1 });

    for (const name of ['recall', 'chat', 'memory_search', 'chat again'])
      recorder.record(step(name));
    await recorder.flush();

    expect(await storedSteps(run.id)).toEqual([
      { seq: 1, name: 'recall' },
      { seq: 2, name: 'chat' },
      { seq: 3, name: 'memory_search' },
      { seq: 4, name: 'chat again' },
    ]);
    expect(recorder.count()).toBe(4);
  });

  it('throws from flush when a step could not be stored, once the others are', async () => {
    const run = await newRun();
    const recorder = createStepRecorder(db.pool, { runId: run.id, userId: run.userId, attempt: 1 });

    recorder.record(step('before'));
    recorder.record({ ...step('unstorable'), durationMs: Number.NaN });
    recorder.record(step('after'));

    await expect(recorder.flush()).rejects.toThrow(/integer/);
    expect(await storedSteps(run.id)).toEqual([
      { seq: 1, name: 'before' },
      { seq: 3, name: 'after' },
    ]);
  });
});

// A tool that counts its runs and answers what it was given.
function countingTool(name: string, fields: Partial<AgentTool> = {}): AgentTool & { runs: number } {
  const tool = {
    runs: 0,
    definition: { name, description: name, parameters: { type: 'object' } },
    risk: 'safe' as const,
    async run(args: Record<string, unknown>) {
      tool.runs += 1;
      return { ran: args };
    },
    ...fields,
  };
  return tool;
}

async function loopWith(tools: AgentTool[], start: LoopStart) {
  const run = await newRun();
  const loopRun = {
    ...run,
    turnId: randomUUID(),
    conversationId: randomUUID(),
    userMessageId: undefined,
    timeZone: undefined,
  };
  const recorder = createStepRecorder(db.pool, { runId: run.id, userId: run.userId, attempt: 1 });
  const deps: LoopDeps = {
    bus,
    tools,
    settings: {
      maxSteps: 4,
      toolTimeoutMs: 1_000,
      turnDeadlineMs: 10_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 5_000,
    },
    recorder,
    emit: () => {},
    isStreamed: false,
  };
  const result = await runAgentLoop(deps, loopRun, start);
  await recorder.flush();
  return { result, runId: run.id };
}

const call = (name: string, args: Record<string, unknown>): ToolCall => ({
  id: randomUUID(),
  name,
  arguments: args,
});

describe('runAgentLoop', () => {
  it("pauses on a question tool's call and goes on with the answer as its result", async () => {
    const ask = countingTool('ask_user', { pausesForAnswer: true });
    const asked = call('ask_user', { question: 'Which airport?' });
    script.push({ content: 'One question first.', toolCalls: [asked] });

    const { result: paused } = await loopWith([ask], {
      prompt: [{ role: 'user', content: 'Book me a flight.' }],
    });

    expect(paused.paused).toMatchObject({ kind: 'question', call: asked });
    expect(paused.content).toBe('One question first.');
    const state = paused.paused?.state;
    if (!state) throw new Error('no state');
    sent.length = 0;
    script.push({ content: 'Booked from OSL.', toolCalls: [] });

    const { result, runId } = await loopWith([ask], {
      state,
      decision: { toolCallId: asked.id, status: 'answered', answer: 'Oslo' },
    });

    expect(result.content).toBe('Booked from OSL.');
    expect(ask.runs).toBe(0);
    expect(sent[0]?.at(-1)).toEqual({
      role: 'tool',
      toolCallId: asked.id,
      content: JSON.stringify({ answer: 'Oslo' }),
    });
    expect(await storedSteps(runId)).toEqual([
      { seq: 1, name: 'ask_user' },
      { seq: 2, name: 'openai/fake-gpt' },
    ]);
  });

  it('tells the model a question expired unanswered', async () => {
    const ask = countingTool('ask_user', { pausesForAnswer: true });
    const asked = call('ask_user', { question: 'Window or aisle?' });
    script.push({ content: '', toolCalls: [asked] });
    const { result: paused } = await loopWith([ask], {
      prompt: [{ role: 'user', content: 'Book a seat.' }],
    });
    const state = paused.paused?.state;
    if (!state) throw new Error('no state');
    sent.length = 0;

    await loopWith([ask], {
      state,
      decision: { toolCallId: asked.id, status: 'answered', answer: null },
    });

    expect(sent[0]?.at(-1)?.content).toBe(JSON.stringify({ answer: null, expired: true }));
  });

  it("weighs a call by its arguments when the tool has riskOf, over the tool's risk", async () => {
    const write = countingTool('memory_write', {
      riskOf: (args) =>
        typeof args.path === 'string' && args.path.startsWith('skills/') ? 'risky' : 'safe',
    });
    const note = call('memory_write', { path: 'notes/a.md' });
    const skill = call('memory_write', { path: 'skills/trip.md' });
    script.push({ content: '', toolCalls: [note] }, { content: '', toolCalls: [skill] });

    const { result } = await loopWith([write], {
      prompt: [{ role: 'user', content: 'Write both.' }],
    });

    expect(write.runs).toBe(1);
    expect(result.paused).toMatchObject({ kind: 'approval', call: skill });
  });
});
