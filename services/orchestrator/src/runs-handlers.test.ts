import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { connectTestBus, sendRaw } from '@jarvis/bus/testing';
import {
  orchestratorRunsGet,
  orchestratorRunsList,
  type RunStatus,
  type RunsListRequest,
} from '@jarvis/contracts';
import { type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from './database-fixture';
import { registerRunHandlers } from './runs-handlers';

let db: TestDatabase;
let serverBus: Bus;
let clientBus: Bus;
let subscriptions: ReturnType<typeof registerRunHandlers>;

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('orchestrator-runs');
  serverBus = await connectTestBus(namespace);
  clientBus = await connectTestBus(namespace);
  subscriptions = registerRunHandlers(serverBus, db.pool);
  // A request published before the server's SUB reached NATS would find no responders.
  await serverBus.nc.flush();
});

afterAll(async () => {
  for (const subscription of subscriptions ?? []) subscription.unsubscribe();
  await clientBus?.close();
  await serverBus?.close();
  await db?.stop();
});

type NewRun = {
  userId: string;
  createdAt: string;
  conversationId?: string;
  status?: RunStatus;
};

// A run as the turn worker leaves it, written directly: these subjects only read runs.
async function addRun(run: NewRun): Promise<string> {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO orchestrator.runs
       (id, turn_id, user_id, conversation_id, user_message_id, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      id,
      randomUUID(),
      run.userId,
      run.conversationId ?? randomUUID(),
      randomUUID(),
      run.status ?? 'completed',
      run.createdAt,
    ],
  );
  return id;
}

type NewStep = {
  runId: string;
  userId: string;
  attempt: number;
  seq: number;
  kind?: string;
  name?: string;
};

async function addStep(step: NewStep): Promise<string> {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO orchestrator.run_steps
       (id, run_id, user_id, attempt, seq, kind, name, status, started_at, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'ok', now(), 1)`,
    [
      id,
      step.runId,
      step.userId,
      step.attempt,
      step.seq,
      step.kind ?? 'tool',
      step.name ?? `step ${step.attempt}.${step.seq}`,
    ],
  );
  return id;
}

function list(userId: string, extra: Partial<RunsListRequest> = {}) {
  return clientBus.request(orchestratorRunsList, { userId, ...extra });
}

async function listIds(userId: string, extra: Partial<RunsListRequest> = {}) {
  return (await list(userId, extra)).runs.map((run) => run.id);
}

function get(userId: string, id: string) {
  return clientBus.request(orchestratorRunsGet, { userId, id });
}

const NOT_FOUND = { code: 'not_found', message: 'run not found' };

describe('orchestrator.runs.list', () => {
  it('answers a run with everything a summary holds, numbers as numbers', async () => {
    const userId = randomUUID();
    const [id, turnId, conversationId, userMessageId] = [
      randomUUID(),
      randomUUID(),
      randomUUID(),
      randomUUID(),
    ];
    await db.pool.query(
      `INSERT INTO orchestrator.runs
         (id, turn_id, user_id, conversation_id, user_message_id, status, attempts, provider,
          model, input_tokens, output_tokens, error_code, error_message, trace_id, created_at,
          started_at, finished_at, cost_usd)
       VALUES ($1, $2, $3, $4, $5, 'failed', 2, 'openai', 'gpt-test', 120, 7, 'timeout',
               'model-gateway did not answer in time', 'trace-1', '2025-03-01T10:00:00.000Z',
               '2025-03-01T10:00:00.250Z', '2025-03-01T10:00:09.500Z', 0.001234567)`,
      [id, turnId, userId, conversationId, userMessageId],
    );
    // Counted over every attempt.
    await addStep({ runId: id, userId, attempt: 1, seq: 1, kind: 'recall' });
    await addStep({ runId: id, userId, attempt: 2, seq: 1, kind: 'recall' });
    await addStep({ runId: id, userId, attempt: 2, seq: 2, kind: 'model' });

    const reply = await list(userId);

    expect(reply).toEqual({
      runs: [
        {
          id,
          kind: 'turn',
          turnId,
          conversationId,
          missionId: null,
          status: 'failed',
          attempts: 2,
          provider: 'openai',
          model: 'gpt-test',
          usage: { inputTokens: 120, outputTokens: 7 },
          costUsd: 0.001234567,
          steps: 3,
          error: { code: 'timeout', message: 'model-gateway did not answer in time' },
          traceId: 'trace-1',
          createdAt: '2025-03-01T10:00:00.000Z',
          startedAt: '2025-03-01T10:00:00.250Z',
          finishedAt: '2025-03-01T10:00:09.500Z',
        },
      ],
    });
  });

  it('answers a queued run with its nulls and zeros', async () => {
    const userId = randomUUID();
    await addRun({ userId, createdAt: '2025-03-01T10:00:00Z', status: 'queued' });

    const [run] = (await list(userId)).runs;

    expect(run).toMatchObject({
      status: 'queued',
      attempts: 0,
      provider: null,
      model: null,
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: 0,
      steps: 0,
      error: null,
      traceId: null,
      startedAt: null,
      finishedAt: null,
    });
  });

  it('pages newest first by `before` until no nextBefore is left', async () => {
    const userId = randomUUID();
    const ids: string[] = [];
    for (const minute of ['01', '02', '03', '04', '05']) {
      ids.push(await addRun({ userId, createdAt: `2025-03-01T10:${minute}:00Z` }));
    }
    const newestFirst = [...ids].reverse();

    const first = await list(userId, { limit: 2 });
    const second = await list(userId, { limit: 2, before: first.nextBefore });
    const third = await list(userId, { limit: 2, before: second.nextBefore });

    expect(first.runs.map((run) => run.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.nextBefore).toBe('2025-03-01T10:04:00.000Z');
    expect(second.runs.map((run) => run.id)).toEqual(newestFirst.slice(2, 4));
    expect(second.nextBefore).toBe('2025-03-01T10:02:00.000Z');
    expect(third).toEqual({ runs: [expect.objectContaining({ id: newestFirst[4] })] });
  });

  it('leaves nextBefore out when the last page is exactly full', async () => {
    const userId = randomUUID();
    await addRun({ userId, createdAt: '2025-03-01T10:00:00Z' });
    await addRun({ userId, createdAt: '2025-03-01T10:01:00Z' });

    const reply = await list(userId, { limit: 2 });

    expect(reply.runs).toHaveLength(2);
    expect(reply).not.toHaveProperty('nextBefore');
  });

  it('answers 20 runs when no limit is given', async () => {
    const userId = randomUUID();
    await db.pool.query(
      `INSERT INTO orchestrator.runs
         (id, turn_id, user_id, conversation_id, user_message_id, status, created_at)
       SELECT gen_random_uuid(), gen_random_uuid(), $1, gen_random_uuid(), gen_random_uuid(),
              'completed', '2025-03-01T10:00:00Z'::timestamptz + n * interval '1 second'
       FROM generate_series(1, 21) AS n`,
      [userId],
    );

    const reply = await list(userId);

    expect(reply.runs).toHaveLength(20);
    expect(reply.runs[0]?.createdAt).toBe('2025-03-01T10:00:21.000Z');
    expect(reply.nextBefore).toBe('2025-03-01T10:00:02.000Z');
  });

  it('never ends a page inside a millisecond, so the next page misses nothing', async () => {
    const userId = randomUUID();
    const newest = await addRun({ userId, createdAt: '2025-03-01T10:00:00.600Z' });
    // One millisecond, two runs: Postgres tells them apart, the cursor cannot.
    const later = await addRun({ userId, createdAt: '2025-03-01T10:00:00.500200Z' });
    const earlier = await addRun({ userId, createdAt: '2025-03-01T10:00:00.500100Z' });

    const first = await list(userId, { limit: 2 });
    const second = await list(userId, { limit: 2, before: first.nextBefore });

    expect(first.runs.map((run) => run.id)).toEqual([newest]);
    expect(first.nextBefore).toBe('2025-03-01T10:00:00.600Z');
    expect(second.runs.map((run) => run.id)).toEqual([later, earlier]);
    expect(second).not.toHaveProperty('nextBefore');
  });

  it('filters by conversation and status, together and with the cursor', async () => {
    const userId = randomUUID();
    const [talk, other] = [randomUUID(), randomUUID()];
    const oldFailed = await addRun({
      userId,
      conversationId: talk,
      status: 'failed',
      createdAt: '2025-03-01T10:00:00Z',
    });
    const done = await addRun({ userId, conversationId: talk, createdAt: '2025-03-01T10:01:00Z' });
    const newFailed = await addRun({
      userId,
      conversationId: talk,
      status: 'failed',
      createdAt: '2025-03-01T10:02:00Z',
    });
    const elsewhere = await addRun({
      userId,
      conversationId: other,
      status: 'failed',
      createdAt: '2025-03-01T10:03:00Z',
    });

    expect(await listIds(userId, { conversationId: talk })).toEqual([newFailed, done, oldFailed]);
    expect(await listIds(userId, { status: 'failed' })).toEqual([elsewhere, newFailed, oldFailed]);
    expect(await listIds(userId, { conversationId: talk, status: 'failed' })).toEqual([
      newFailed,
      oldFailed,
    ]);
    expect(await listIds(userId, { status: 'failed', before: '2025-03-01T10:02:00.000Z' })).toEqual(
      [oldFailed],
    );
    expect(await listIds(userId, { status: 'running' })).toEqual([]);
  });
});

describe('orchestrator.runs.get', () => {
  it('answers the run with its context and steps by attempt, then seq', async () => {
    const userId = randomUUID();
    const [id, turnId, conversationId, userMessageId, replyMessageId] = [
      randomUUID(),
      randomUUID(),
      randomUUID(),
      randomUUID(),
      randomUUID(),
    ];
    const context = { recalled: { facts: 2, messages: 10 }, historyTokens: 812 };
    await db.pool.query(
      `INSERT INTO orchestrator.runs
         (id, turn_id, user_id, conversation_id, user_message_id, status, attempts,
          reply_message_id, provider, model, input_tokens, output_tokens,
          trace_id, created_at, started_at, finished_at, context, cost_usd)
       VALUES ($1, $2, $3, $4, $5, 'completed', 2, $6, 'anthropic', 'claude-test',
               300, 20, 'trace-2', '2025-03-02T08:00:00Z', '2025-03-02T08:00:01Z',
               '2025-03-02T08:00:05Z', $7, 0.0042)`,
      [id, turnId, userId, conversationId, userMessageId, replyMessageId, context],
    );
    const recallId = await addStep({ runId: id, userId, attempt: 1, seq: 0, kind: 'recall' });
    const crashedId = await addStep({ runId: id, userId, attempt: 1, seq: 1, kind: 'model' });
    // Attempt 2 is written before the rest of attempt 2: order comes from the columns alone.
    const answerId = randomUUID();
    await db.pool.query(
      `INSERT INTO orchestrator.run_steps
         (id, run_id, user_id, attempt, seq, kind, name, status, input, output, error,
          input_tokens, output_tokens, cost_usd, started_at, duration_ms)
       VALUES ($1, $2, $3, 2, 2, 'model', 'claude-test', 'ok', $4, $5, NULL, 300, 20, 0.0042,
               '2025-03-02T08:00:04.125Z', 875)`,
      [answerId, id, userId, { messages: 3, tools: 1 }, { text: 'Hello!', finishReason: 'stop' }],
    );
    const weatherId = randomUUID();
    await db.pool.query(
      `INSERT INTO orchestrator.run_steps
         (id, run_id, user_id, attempt, seq, kind, name, status, input, error, started_at,
          duration_ms)
       VALUES ($1, $2, $3, 2, 1, 'tool', 'weather', 'error', $4, 'tool timed out',
               '2025-03-02T08:00:03Z', 1000)`,
      [weatherId, id, userId, { city: 'Lisbon' }],
    );
    const recallAgainId = await addStep({ runId: id, userId, attempt: 2, seq: 0, kind: 'recall' });

    const { run } = await get(userId, id);

    expect(run).toMatchObject({
      id,
      turnId,
      conversationId,
      userMessageId,
      replyMessageId,
      status: 'completed',
      attempts: 2,
      provider: 'anthropic',
      model: 'claude-test',
      usage: { inputTokens: 300, outputTokens: 20 },
      costUsd: 0.0042,
      error: null,
      traceId: 'trace-2',
      context,
      createdAt: '2025-03-02T08:00:00.000Z',
      startedAt: '2025-03-02T08:00:01.000Z',
      finishedAt: '2025-03-02T08:00:05.000Z',
    });
    expect(run.steps.map((step) => step.id)).toEqual([
      recallId,
      crashedId,
      recallAgainId,
      weatherId,
      answerId,
    ]);
    expect(run.steps[3]).toEqual({
      id: weatherId,
      attempt: 2,
      seq: 1,
      kind: 'tool',
      name: 'weather',
      status: 'error',
      input: { city: 'Lisbon' },
      output: {},
      error: 'tool timed out',
      usage: { inputTokens: 0, outputTokens: 0 },
      costUsd: 0,
      startedAt: '2025-03-02T08:00:03.000Z',
      durationMs: 1000,
    });
    expect(run.steps[4]).toMatchObject({
      input: { messages: 3, tools: 1 },
      output: { text: 'Hello!', finishReason: 'stop' },
      error: null,
      usage: { inputTokens: 300, outputTokens: 20 },
      costUsd: 0.0042,
      startedAt: '2025-03-02T08:00:04.125Z',
      durationMs: 875,
    });
  });

  it('answers a run that has no steps yet with none', async () => {
    const userId = randomUUID();
    const id = await addRun({ userId, createdAt: '2025-03-02T08:00:00Z', status: 'queued' });

    const { run } = await get(userId, id);

    expect(run).toMatchObject({ id, replyMessageId: null, context: {}, steps: [] });
  });

  it('answers not_found for a run that does not exist', async () => {
    await expect(get(randomUUID(), randomUUID())).rejects.toMatchObject(NOT_FOUND);
  });
});

describe("another user's runs", () => {
  const owner = randomUUID();
  const intruder = randomUUID();
  const conversationId = randomUUID();
  let runId: string;
  let intruderRunId: string;

  beforeAll(async () => {
    runId = await addRun({ userId: owner, conversationId, createdAt: '2025-03-03T09:00:00Z' });
    await addStep({ runId, userId: owner, attempt: 1, seq: 0 });
    intruderRunId = await addRun({ userId: intruder, createdAt: '2025-03-03T08:00:00Z' });
  });

  it('answer a get exactly like a missing run', async () => {
    await expect(get(intruder, runId)).rejects.toMatchObject(NOT_FOUND);
    await expect(get(intruder, randomUUID())).rejects.toMatchObject(NOT_FOUND);
  });

  it('never show up in listings, even filtered by their conversation', async () => {
    expect(await listIds(intruder)).toEqual([intruderRunId]);
    expect(await listIds(intruder, { conversationId })).toEqual([]);
  });

  it('stay readable by their owner', async () => {
    const { run } = await get(owner, runId);

    expect(run.steps).toHaveLength(1);
    expect(await listIds(owner)).toEqual([runId]);
  });
});

describe('request validation at the edge', () => {
  const userId = randomUUID();

  it.each([
    ['orchestrator.runs.list', { limit: 0 }, /^limit: /],
    ['orchestrator.runs.list', { limit: 101 }, /^limit: /],
    ['orchestrator.runs.list', { limit: 2.5 }, /^limit: /],
    ['orchestrator.runs.list', { before: 'yesterday' }, /^before: /],
    ['orchestrator.runs.list', { conversationId: 'nope' }, /^conversationId: /],
    ['orchestrator.runs.list', { status: 'done' }, /^status: /],
    ['orchestrator.runs.list', { userId: 'nope' }, /^userId: /],
    ['orchestrator.runs.get', { id: 'nope' }, /^id: /],
    ['orchestrator.runs.get', {}, /^id: /],
    ['orchestrator.runs.get', { id: randomUUID(), userId: undefined }, /^userId: /],
  ])('answers bad_request to %s with %j', async (subject, body, message) => {
    const reply = await sendRaw(clientBus, subject, { userId, ...body });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(message) },
    });
  });
});
