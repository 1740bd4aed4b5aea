import { randomUUID } from 'node:crypto';
import { ChatResponse, RunsGetResponse, RunsListResponse, TurnEvent } from '@jarvis/contracts';
import {
  connectSse,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// At gpt-4.1-mini's price (0.4 USD per million input tokens), what a turn's one model call costs.
const TURN_USAGE = { inputTokens: 625_000, outputTokens: 0 };
const TURN_COST_USD = 0.25;
const FAILING_MESSAGE = 'this turn fails';

// GET /v1/runs and /v1/runs/{id} over runs that real turns left: the gateway's routes in front of
// the orchestrator, which alone writes runs.
describe('GET /v1/runs and /v1/runs/{id}', () => {
  let fixture: StackFixture;
  let aliceKey: string;
  let bobKey: string;
  let aliceOld: string;
  let aliceNew: string;
  let bobs: string;

  const call = async (route: string, key: string) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/v1/runs${route}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };

  beforeAll(async () => {
    fixture = await startStackFixture({
      MODEL_ROUTE_CHAT: 'openai/gpt-4.1-mini',
      MODEL_ROUTE_UTILITY: 'openai/gpt-4.1-mini',
    });
    // A model error is final: the turn sent this message fails, and its run with it.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const asked = sentMessages(request).at(-1)?.content ?? '';
      return asked.includes(FAILING_MESSAGE)
        ? { status: 400, errorMessage: 'refused by the test' }
        : { content: 'Done.', usage: TURN_USAGE };
    });
    aliceKey = (await fixture.createUser('alice')).apiKey;
    bobKey = (await fixture.createUser('bob')).apiKey;

    // The failed turn streams, as its accepted event names its run.
    const failing = await connectSse(`${fixture.stack.gatewayUrl}/v1/chat`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${aliceKey}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ message: FAILING_MESSAGE }),
    });
    aliceOld = (JSON.parse((await failing.next()).data) as { runId: string }).runId;
    const events = await failing.until('failed');
    expect(TurnEvent.parse(JSON.parse(events.at(-1)?.data ?? '{}'))).toMatchObject({
      type: 'failed',
    });
    failing.close();

    const answered = async (key: string) => {
      const response = await fixture.chat(key, { message: 'hello' });
      expect(response.status).toBe(200);
      return ChatResponse.parse(await response.json()).runId;
    };
    aliceNew = await answered(aliceKey);
    bobs = await answered(bobKey);
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it("lists only the key's own runs, newest first", async () => {
    const reply = await call('/', aliceKey);

    expect(reply.status).toBe(200);
    const { runs } = RunsListResponse.parse(reply.body);
    expect(runs.map((run) => run.id)).toEqual([aliceNew, aliceOld]);
    expect(runs[0]).toMatchObject({ status: 'completed', costUsd: TURN_COST_USD, steps: 2 });
  });

  it('pages with limit and before, and filters by status', async () => {
    const first = await call('/?limit=1', aliceKey);
    const { runs, nextBefore } = RunsListResponse.parse(first.body);
    const second = await call(`/?limit=1&before=${nextBefore}`, aliceKey);
    const failed = await call('/?status=failed', aliceKey);

    expect(runs.map((run) => run.id)).toEqual([aliceNew]);
    expect(nextBefore).toBe(runs[0]?.createdAt);
    expect(RunsListResponse.parse(second.body)).toEqual({
      runs: [expect.objectContaining({ id: aliceOld })],
    });
    expect(RunsListResponse.parse(failed.body).runs.map((run) => run.id)).toEqual([aliceOld]);
  });

  it('answers an own run with its steps', async () => {
    const reply = await call(`/${aliceNew}`, aliceKey);

    expect(reply.status).toBe(200);
    const { run } = RunsGetResponse.parse(reply.body);
    expect(run).toMatchObject({
      id: aliceNew,
      status: 'completed',
      costUsd: TURN_COST_USD,
      replyMessageId: expect.any(String),
    });
    expect(run.steps).toEqual([
      expect.objectContaining({ attempt: 1, seq: 1, kind: 'recall', name: 'memory.recall' }),
      expect.objectContaining({ attempt: 1, seq: 2, kind: 'model', name: 'openai/gpt-4.1-mini' }),
    ]);
  });

  it("answers 404 to another user's run, exactly like a missing one", async () => {
    const notFound = {
      status: 404,
      body: { error: { code: 'not_found', message: 'run not found' } },
    };

    expect(await call(`/${bobs}`, aliceKey)).toEqual(notFound);
    expect(await call(`/${randomUUID()}`, aliceKey)).toEqual(notFound);
  });
});
