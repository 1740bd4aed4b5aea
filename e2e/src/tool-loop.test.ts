import { ChatResponse, RunsGetResponse } from '@jarvis/contracts';
import type { FakeLlmRequest, FakeReply } from '@jarvis/testkit';
import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The agent's tool loop through the whole stack: the fake model asks for memory tools, the
// orchestrator runs them against the real memory service, and every step is on record.
describe('the tool loop', () => {
  let fixture: StackFixture;
  let key: string;
  let db: pg.Client;

  // Replies to turn requests by how many tool results the model has seen so far; background
  // requests (fact extraction, summaries) get a plain answer.
  const onTurn = (reply: (toolResults: number, request: FakeLlmRequest) => FakeReply) =>
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool').length;
      return reply(results, request);
    });

  const chat = async (message: string) => {
    const response = await fixture.chat(key, { message });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  const stepsOf = async (runId: string) => {
    const { rows } = await db.query<{ kind: string; name: string; status: string }>(
      'SELECT kind, name, status FROM orchestrator.run_steps WHERE run_id = $1 ORDER BY attempt, seq',
      [runId],
    );
    return rows;
  };

  beforeAll(async () => {
    fixture = await startStackFixture({ MAX_STEPS_PER_TURN: '4', TURN_DEADLINE_MS: '4000' });
    key = (await fixture.createUser('tess')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  it('runs tools until the model answers, and records every step', async () => {
    onTurn((results) => {
      if (results === 0) {
        return {
          toolCalls: [
            {
              name: 'memory_write',
              arguments: { path: 'notes/trip.md', content: 'Lisbon in June' },
            },
          ],
        };
      }
      if (results === 1) {
        return { toolCalls: [{ name: 'memory_read', arguments: { path: 'notes/trip.md' } }] };
      }
      return { content: 'Saved and checked.' };
    });

    const reply = await chat('Note that our trip is to Lisbon in June.');

    expect(reply.reply.content).toBe('Saved and checked.');
    const file = await fetch(
      `${fixture.stack.gatewayUrl}/v1/memory/files/content?path=notes/trip.md`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    expect(((await file.json()) as { file: { content: string } }).file.content).toBe(
      'Lisbon in June',
    );
    const last = fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
    expect(JSON.stringify(sentMessages(last).at(-1))).toContain('Lisbon in June');
    expect(await stepsOf(reply.runId)).toEqual([
      { kind: 'recall', name: 'memory.recall', status: 'ok' },
      { kind: 'model', name: 'openai/fake-chat', status: 'ok' },
      { kind: 'tool', name: 'memory_write', status: 'ok' },
      { kind: 'model', name: 'openai/fake-chat', status: 'ok' },
      { kind: 'tool', name: 'memory_read', status: 'ok' },
      { kind: 'model', name: 'openai/fake-chat', status: 'ok' },
    ]);
    // The same record through the API, with what the tool was given.
    const run = await fetch(`${fixture.stack.gatewayUrl}/v1/runs/${reply.runId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(run.status).toBe(200);
    const { run: detail } = RunsGetResponse.parse(await run.json());
    expect(detail).toMatchObject({ status: 'completed', steps: expect.any(Array) });
    expect(detail.steps[2]).toMatchObject({
      kind: 'tool',
      name: 'memory_write',
      input: { path: 'notes/trip.md', content: 'Lisbon in June' },
    });
    expect(detail.context).toMatchObject({ tokenBudget: 8_000 });
  });

  it('gives the model its mistakes to correct: bad arguments, unknown tools', async () => {
    onTurn((results) => {
      if (results === 0) {
        return {
          toolCalls: [
            { id: 'a', name: 'memory_read', arguments: { file: 'x' } },
            { id: 'b', name: 'launch_rocket', arguments: {} },
          ],
        };
      }
      return { content: 'Sorry, let me try differently.' };
    });

    const reply = await chat('Read my notes.');

    expect(reply.reply.content).toBe('Sorry, let me try differently.');
    const last = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1));
    const results = last.filter((message) => message.role === 'tool').map((m) => m.content);
    expect(results[0]).toMatch(/invalid arguments: path/);
    expect(results[1]).toMatch(/there is no tool named launch_rocket/);
    // A name the model made up is recorded (and counted in the metrics) as `unknown`.
    const toolSteps = (await stepsOf(reply.runId)).filter((step) => step.kind === 'tool');
    expect(toolSteps.map((step) => step.name)).toEqual(['memory_read', 'unknown']);
  });

  it('stops at the step limit and says so', async () => {
    onTurn((results) => ({
      toolCalls: [{ name: 'memory_ls', arguments: { prefix: `round-${results}/` } }],
    }));

    const reply = await chat('Look through everything.');

    expect(reply.reply.content).toMatch(/I stopped after 4 steps without finishing/);
    const steps = await stepsOf(reply.runId);
    expect(steps.at(-1)).toEqual({ kind: 'guardrail', name: 'max_steps', status: 'error' });
  });

  it('stops a model that repeats the same call', async () => {
    onTurn(() => ({ toolCalls: [{ name: 'memory_ls', arguments: { prefix: 'same/' } }] }));

    const reply = await chat('List my files.');

    expect(reply.reply.content).toMatch(/kept repeating the same memory_ls call/);
    const sent = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1));
    expect(sent.at(-1)?.content).toMatch(/You already made this exact call/);
  });

  it('stops when the turn runs out of time', async () => {
    onTurn((results) => ({
      toolCalls: [{ name: 'memory_ls', arguments: { prefix: `slow-${results}/` } }],
      delayMs: 1_500,
    }));

    const reply = await chat('Take your time.');

    expect(reply.reply.content).toMatch(/I ran out of time for this message \(the limit is 4 s\)/);
  });

  it('stops when the output tokens of the turn pass their cap', async () => {
    onTurn(() => ({
      toolCalls: [{ name: 'memory_ls', arguments: {} }],
      usage: { inputTokens: 10, outputTokens: 20_000 },
    }));

    const reply = await chat('Write a lot.');

    expect(reply.reply.content).toMatch(/limit of 16000 output tokens/);
  });
});
