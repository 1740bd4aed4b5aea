import { randomUUID } from 'node:crypto';
import { RunsGetResponse, RunsListResponse } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRunHandlers } from '../../../orchestrator/src/runs-handlers';
import {
  badRequest,
  type RouterHarness,
  startRouterHarness,
  type TestUser,
} from './router-test-harness';

let harness: RouterHarness;
let alice: TestUser;
let bob: TestUser;

beforeAll(async () => {
  harness = await startRouterHarness('/v1/runs', registerRunHandlers);
  await migrate(harness.db.pool, {
    schema: 'orchestrator',
    directory: new URL('../../../orchestrator/migrations', import.meta.url),
  });
  ({ alice, bob } = harness);
});

afterAll(async () => {
  await harness?.stop();
});

const call: RouterHarness['call'] = (method, route, options) =>
  harness.call(method, route, options);

// A run as the orchestrator's turn worker leaves it, with one step.
async function addRun(
  userId: string,
  createdAt: string,
  status: 'completed' | 'failed' = 'completed',
): Promise<string> {
  const id = randomUUID();
  await harness.db.pool.query(
    `INSERT INTO orchestrator.runs
       (id, turn_id, user_id, conversation_id, user_message_id, status, created_at, cost_usd)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 0.25)`,
    [id, randomUUID(), userId, randomUUID(), randomUUID(), status, createdAt],
  );
  await harness.db.pool.query(
    `INSERT INTO orchestrator.run_steps
       (id, run_id, user_id, attempt, seq, kind, name, status, started_at, duration_ms)
     VALUES ($1, $2, $3, 1, 0, 'recall', 'memory.recall', 'ok', $4, 12)`,
    [randomUUID(), id, userId, createdAt],
  );
  return id;
}

const NOT_FOUND = {
  status: 404,
  body: { error: { code: 'not_found', message: 'run not found' } },
};

describe('GET /v1/runs and /v1/runs/{id}', () => {
  let aliceOld: string;
  let aliceNew: string;
  let bobs: string;

  beforeAll(async () => {
    aliceOld = await addRun(alice.id, '2025-03-01T10:00:00Z', 'failed');
    aliceNew = await addRun(alice.id, '2025-03-01T11:00:00Z');
    bobs = await addRun(bob.id, '2025-03-01T12:00:00Z');
  });

  it.each([['/'], [`/${randomUUID()}`]])('answers 401 to GET %s without a key', async (route) => {
    const reply = await call('GET', route);

    expect(reply.status).toBe(401);
    expect(reply.body).toEqual({
      error: { code: 'unauthorized', message: expect.stringContaining('missing API key') },
    });
  });

  it("lists only the key's own runs, newest first", async () => {
    const reply = await call('GET', '/', { key: alice.key });

    expect(reply.status).toBe(200);
    const { runs } = RunsListResponse.parse(reply.body);
    expect(runs.map((run) => run.id)).toEqual([aliceNew, aliceOld]);
    expect(runs[0]).toMatchObject({ status: 'completed', costUsd: 0.25, steps: 1 });
  });

  it('pages with limit and before, and filters by status', async () => {
    const first = await call('GET', '/?limit=1', { key: alice.key });
    const { nextBefore } = RunsListResponse.parse(first.body);
    const second = await call('GET', `/?limit=1&before=${nextBefore}`, { key: alice.key });
    const failed = await call('GET', '/?status=failed', { key: alice.key });

    expect(nextBefore).toBe('2025-03-01T11:00:00.000Z');
    expect(RunsListResponse.parse(second.body)).toEqual({
      runs: [expect.objectContaining({ id: aliceOld })],
    });
    expect(RunsListResponse.parse(failed.body).runs.map((run) => run.id)).toEqual([aliceOld]);
  });

  it('answers an own run with its steps', async () => {
    const reply = await call('GET', `/${aliceNew}`, { key: alice.key });

    expect(reply.status).toBe(200);
    const { run } = RunsGetResponse.parse(reply.body);
    expect(run).toMatchObject({ id: aliceNew, context: {}, replyMessageId: null });
    expect(run.steps).toEqual([
      expect.objectContaining({ attempt: 1, seq: 0, kind: 'recall', name: 'memory.recall' }),
    ]);
  });

  it("answers 404 to another user's run, exactly like a missing one", async () => {
    expect(await call('GET', `/${bobs}`, { key: alice.key })).toEqual(NOT_FOUND);
    expect(await call('GET', `/${randomUUID()}`, { key: alice.key })).toEqual(NOT_FOUND);
  });

  it.each([
    ['a run id that is not a uuid', '/nope', /^id: /],
    ['an unknown list parameter', '/?sort=asc', /^\(root\): /],
    // The user is always the key's: naming another one is refused, not ignored.
    ['a userId in the list', `/?userId=${randomUUID()}`, /^\(root\): /],
    ['a userId on a run', `/${randomUUID()}?userId=${randomUUID()}`, /^\(root\): /],
    ['a limit of 0', '/?limit=0', /^limit: /],
    ['a limit over 100', '/?limit=101', /^limit: /],
    ['a limit that is no number', '/?limit=ten', /^limit: /],
    ['a repeated limit', '/?limit=1&limit=2', /^limit: /],
    ['a before that is no datetime', '/?before=yesterday', /^before: /],
    ['an unknown status', '/?status=done', /^status: /],
    ['a conversationId that is not a uuid', '/?conversationId=nope', /^conversationId: /],
  ])('answers 400 to %s', async (_label, route, message) => {
    expect(await call('GET', route, { key: alice.key })).toEqual(badRequest(message));
  });
});
