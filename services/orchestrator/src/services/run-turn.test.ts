import { randomUUID } from 'node:crypto';
import { type Bus, BusError, ensureUserEventStream, readEvents } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import {
  memoryMessagesGet,
  type StoredMessage,
  type TurnEvent,
  TurnEvent as TurnEventSchema,
  turnEventSubject,
  USER_EVENTS_STREAM,
  UserEvent,
  userEventSubject,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { connectTestRedis, type TestDatabase, uniqueNamespace, waitFor } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tryLockConversation } from '../conversation-lock';
import { startDatabaseFixture } from '../database-fixture';
import {
  findRunByTurn,
  insertRun,
  markRunCompleted,
  markRunStarted,
  type NewRun,
  type RunCompletion,
} from '../repositories/runs-repository';
import { recordSubmission } from '../repositories/submissions-repository';
import { watchTurnCancellations } from './cancel-turn';
import { watchChatRoute } from './chat-route';
import { runTurn, type TurnDeps } from './run-turn';

// No model gateway answers in this namespace, and memory only through a stand-in that reads back
// stored replies: these tests cover the paths a turn takes before it needs them. The full turn
// is covered end to end in /e2e.
const MAX_DELIVER = 3;

let db: TestDatabase;
let bus: Bus;
let listener: Bus;
let memory: Bus;
let redis: Redis;
// The replies the stand-in for memory keeps, by id.
const replies = new Map<string, StoredMessage>();
let deps: TurnDeps;

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('orchestrator');
  bus = await connectTestBus(namespace);
  listener = await connectTestBus(namespace);
  memory = await connectTestBus(namespace);
  memory.serve(memoryMessagesGet, async ({ id }) => {
    const message = replies.get(id);
    if (!message) throw new BusError('not_found', 'message not found');
    return { message };
  });
  await memory.nc.flush();
  await ensureUserEventStream(bus);
  redis = connectTestRedis();
  deps = {
    bus,
    pool: db.pool,
    redis,
    logger: createLogger('orchestrator-test', 'silent'),
    contextTokenBudget: 8_000,
    historyLimit: 50,
    tools: [],
    approvalTtlMs: 60_000,
    loop: {
      maxSteps: 4,
      toolTimeoutMs: 1_000,
      turnDeadlineMs: 10_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 1_000,
      modelCallTimeoutMs: 5_000,
    },
    lockLeaseMs: 5_000,
    maxAttempts: MAX_DELIVER,
    cancellations: watchTurnCancellations(bus, redis),
    chatRoute: watchChatRoute({ bus, logger: createLogger('orchestrator-test', 'silent') }),
  };
});

afterAll(async () => {
  await listener?.close();
  await memory?.close();
  await bus?.close();
  await redis?.quit();
  await db?.stop();
});

type Turn = {
  turnId: string;
  runId: string;
  userId: string;
  conversationId: string;
  userMessageId: string;
};

function newRun(): NewRun {
  return {
    id: randomUUID(),
    turnId: randomUUID(),
    userId: randomUUID(),
    conversationId: randomUUID(),
    userMessageId: randomUUID(),
    userMessageAt: new Date().toISOString(),
    userMessageSeq: 1,
    traceId: undefined,
    timeZone: undefined,
  };
}

async function queueRun(fields: Partial<NewRun> = {}): Promise<Turn> {
  const run = await insertRun(db.pool, { ...newRun(), ...fields });
  return {
    turnId: run.turnId,
    runId: run.id,
    userId: run.userId,
    conversationId: run.conversationId,
    userMessageId: run.userMessageId,
  };
}

// A reply memory keeps, as a turn's completion names it.
function keepReply(content: string): string {
  const id = randomUUID();
  replies.set(id, {
    id,
    conversationId: randomUUID(),
    role: 'assistant',
    content,
    createdAt: new Date().toISOString(),
  });
  return id;
}

function completion(replyContent: string): RunCompletion {
  return {
    replyMessageId: keepReply(replyContent),
    provider: 'openai',
    model: 'fake-gpt',
    usage: { inputTokens: 12, outputTokens: 2 },
  };
}

// Collects the events published for one turn; the subscription is live on return.
async function listenToTurn(turnId: string): Promise<{ events: TurnEvent[]; stop(): void }> {
  const events: TurnEvent[] = [];
  const subscription = listener.subscribe(turnEventSubject(turnId), TurnEventSchema, (event) =>
    events.push(event),
  );
  await listener.nc.flush();
  return { events, stop: () => subscription.unsubscribe() };
}

describe('runTurn', () => {
  it('drops a turn that has no run, and leaves its conversation unlocked', async () => {
    const conversationId = randomUUID();
    const outcome = await runTurn(
      deps,
      {
        turnId: randomUUID(),
        runId: randomUUID(),
        userId: randomUUID(),
        conversationId,
        userMessageId: randomUUID(),
      },
      1,
    );

    expect(outcome).toEqual({ type: 'drop' });
    const lock = await tryLockConversation(redis, bus.namespace, conversationId, 5_000);
    expect(lock).toBeDefined();
    await lock?.release();
  });

  it('does not find a run through another user', async () => {
    const turn = await queueRun();

    const outcome = await runTurn(deps, { ...turn, userId: randomUUID() }, 1);

    expect(outcome).toEqual({ type: 'drop' });
    expect((await findRunByTurn(db.pool, turn.userId, turn.turnId))?.status).toBe('queued');
  });

  it('announces the reply memory stored again when a completed turn is redelivered', async () => {
    const turn = await queueRun();
    const replyId = keepReply('Purple.');
    await db.pool.query(
      `UPDATE orchestrator.runs SET status = 'completed', reply_message_id = $2,
         input_tokens = 40, output_tokens = 3, attempts = 1
       WHERE id = $1`,
      [turn.runId, replyId],
    );
    const listening = await listenToTurn(turn.turnId);

    const outcome = await runTurn(deps, turn, 2);

    expect(outcome).toEqual({ type: 'ack' });
    const event = await waitFor(() => listening.events[0], { what: 'the done event' });
    listening.stop();
    expect(event).toEqual({
      type: 'done',
      turnId: turn.turnId,
      runId: turn.runId,
      conversationId: turn.conversationId,
      reply: { id: replyId, role: 'assistant', content: 'Purple.' },
      usage: { inputTokens: 40, outputTokens: 3 },
    });
    // Nothing ran again.
    expect((await findRunByTurn(db.pool, turn.userId, turn.turnId))?.attempts).toBe(1);
  });

  it('announces a reply forgotten since as not found', async () => {
    const turn = await queueRun();
    await db.pool.query(
      `UPDATE orchestrator.runs SET status = 'completed', reply_message_id = $2, attempts = 1
       WHERE id = $1`,
      [turn.runId, randomUUID()],
    );
    const listening = await listenToTurn(turn.turnId);

    const outcome = await runTurn(deps, turn, 2);

    expect(outcome).toEqual({ type: 'ack' });
    const event = await waitFor(() => listening.events[0], { what: 'the failed event' });
    listening.stop();
    expect(event).toMatchObject({
      type: 'failed',
      error: { code: 'not_found', message: 'the reply was forgotten' },
    });
  });

  it("announces a finished turn again while its conversation is locked, and keeps the holder's lock", async () => {
    const turn = await queueRun();
    await markRunCompleted(db.pool, turn.runId, completion('Purple.'));
    const other = await tryLockConversation(redis, bus.namespace, turn.conversationId, 5_000);
    const listening = await listenToTurn(turn.turnId);

    const outcome = await runTurn(deps, turn, 2);

    expect(outcome).toEqual({ type: 'ack' });
    await waitFor(() => listening.events[0], { what: 'the done event' });
    listening.stop();
    expect(await other?.renew()).toBe(true);
    await other?.release();
  });

  it('announces the stored error again when a failed turn is redelivered', async () => {
    const turn = await queueRun();
    await db.pool.query(
      `UPDATE orchestrator.runs SET status = 'failed', error_code = 'timeout',
         error_message = 'openai model m did not answer in time'
       WHERE id = $1`,
      [turn.runId],
    );
    const listening = await listenToTurn(turn.turnId);

    const outcome = await runTurn(deps, turn, 2);

    expect(outcome).toEqual({ type: 'ack' });
    const event = await waitFor(() => listening.events[0], { what: 'the failed event' });
    listening.stop();
    expect(event).toEqual({
      type: 'failed',
      turnId: turn.turnId,
      runId: turn.runId,
      conversationId: turn.conversationId,
      error: { code: 'timeout', message: 'openai model m did not answer in time' },
    });
  });

  it('retries shortly, without starting the run, while its conversation is locked', async () => {
    const turn = await queueRun();
    const other = await tryLockConversation(redis, bus.namespace, turn.conversationId, 5_000);
    expect(other).toBeDefined();

    const outcome = await runTurn(deps, turn, 1);
    await other?.release();

    expect(outcome).toEqual({ type: 'retry', delayMs: 250 });
    const run = await findRunByTurn(db.pool, turn.userId, turn.turnId);
    expect(run).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('waits while an earlier message of its conversation is unanswered, then runs', async () => {
    // Stored in this order, though the earlier message's transaction read the later clock: on a
    // real Postgres two appends at once can do that, so the order is memory's, not the times'.
    const earlier = await insertRun(db.pool, {
      ...newRun(),
      userMessageAt: new Date(Date.now() + 1_000).toISOString(),
    });
    const later = await insertRun(db.pool, {
      ...newRun(),
      userId: earlier.userId,
      conversationId: earlier.conversationId,
      userMessageSeq: 2,
    });
    const turn = {
      turnId: later.turnId,
      runId: later.id,
      userId: later.userId,
      conversationId: later.conversationId,
      userMessageId: later.userMessageId,
    };

    const waiting = await runTurn(deps, turn, 1);
    expect(waiting).toEqual({ type: 'retry', delayMs: 250 });
    expect(await findRunByTurn(db.pool, turn.userId, turn.turnId)).toMatchObject({
      status: 'queued',
      attempts: 0,
    });
    await markRunStarted(db.pool, earlier.id);
    await markRunCompleted(db.pool, earlier.id, completion('the earlier answer'));

    // No memory answers here: the turn starts, and waits for memory instead.
    const started = await runTurn(deps, turn, 2);
    expect(started).toEqual({ type: 'retry', delayMs: 2_000 });
    expect(await findRunByTurn(db.pool, turn.userId, turn.turnId)).toMatchObject({
      status: 'running',
      attempts: 1,
    });
  });

  it('waits while a submission of its user recorded before its message is not queued', async () => {
    const turn = await queueRun();
    await recordSubmission(db.pool, {
      turnId: randomUUID(),
      userId: turn.userId,
      request: {},
      idempotencyKey: undefined,
      requestHash: 'earlier',
    });
    await db.pool.query(
      "UPDATE orchestrator.turn_submissions SET created_at = now() - interval '1 minute' WHERE user_id = $1",
      [turn.userId],
    );

    expect(await runTurn(deps, turn, 1)).toEqual({ type: 'retry', delayMs: 250 });
    expect(await findRunByTurn(db.pool, turn.userId, turn.turnId)).toMatchObject({
      status: 'queued',
      attempts: 0,
    });
  });

  it("locks the run's own conversation when the turn's message names another", async () => {
    const turn = await queueRun();
    const other = await tryLockConversation(redis, bus.namespace, turn.conversationId, 5_000);

    const outcome = await runTurn(deps, { ...turn, conversationId: randomUUID() }, 1);
    await other?.release();

    expect(outcome).toEqual({ type: 'retry', delayMs: 250 });
    const run = await findRunByTurn(db.pool, turn.userId, turn.turnId);
    expect(run).toMatchObject({ status: 'queued', attempts: 0 });
  });

  it('retries with backoff while memory cannot be reached, and releases the lock', async () => {
    const turn = await queueRun();

    const outcome = await runTurn(deps, turn, 2);

    expect(outcome).toEqual({ type: 'retry', delayMs: 2_000 });
    const run = await findRunByTurn(db.pool, turn.userId, turn.turnId);
    expect(run).toMatchObject({ status: 'running', attempts: 1, error: null });
    const lock = await tryLockConversation(redis, bus.namespace, turn.conversationId, 5_000);
    expect(lock).toBeDefined();
    await lock?.release();
  });

  it('fails the run and announces it on the last attempt', async () => {
    const turn = await queueRun();
    const listening = await listenToTurn(turn.turnId);

    // Attempts count, not deliveries: every attempt but the last is retried.
    for (let attempt = 1; attempt < MAX_DELIVER; attempt++) {
      expect((await runTurn(deps, turn, attempt)).type).toBe('retry');
    }
    const outcome = await runTurn(deps, turn, MAX_DELIVER);

    expect(outcome).toEqual({ type: 'ack' });
    const event = await waitFor(() => listening.events[0], { what: 'the failed event' });
    listening.stop();
    expect(event).toEqual({
      type: 'failed',
      turnId: turn.turnId,
      runId: turn.runId,
      conversationId: turn.conversationId,
      error: { code: 'unavailable', message: 'memory service is not available' },
    });
    const run = await findRunByTurn(db.pool, turn.userId, turn.turnId);
    expect(run).toMatchObject({
      status: 'failed',
      error: { code: 'unavailable', message: 'memory service is not available' },
    });
  });
});

describe("a scheduled turn's end", () => {
  it("is told on its user's event stream when it fails, with why", async () => {
    const scheduleId = randomUUID();
    const turn = await queueRun({ scheduleId });
    const events: Array<{ event: UserEvent; seq: number }> = [];
    const reader = await readEvents(
      listener,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(turn.userId),
        schema: UserEvent,
        afterSeq: 0,
      },
      (event, seq) => events.push({ event, seq }),
    );

    for (let attempt = 1; attempt < MAX_DELIVER; attempt++) await runTurn(deps, turn, attempt);
    expect(events).toEqual([]);
    await runTurn(deps, turn, MAX_DELIVER);
    // A redelivery of the ended turn tells nothing more.
    await runTurn(deps, turn, MAX_DELIVER + 1);

    await waitFor(() => events.length > 0, { what: 'the schedule_result event' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await reader.stop();
    expect(events.map(({ event }) => event)).toEqual([
      {
        type: 'schedule_result',
        occurredAt: expect.any(String),
        scheduleId,
        turnId: turn.turnId,
        conversationId: turn.conversationId,
        status: 'failed',
        text: 'memory service is not available',
      },
    ]);
  });

  it('is not told for a turn the user typed', async () => {
    const turn = await queueRun();
    const events: UserEvent[] = [];
    const reader = await readEvents(
      listener,
      {
        stream: USER_EVENTS_STREAM.stream,
        subject: userEventSubject(turn.userId),
        schema: UserEvent,
        afterSeq: 0,
      },
      (event) => events.push(event),
    );

    for (let attempt = 1; attempt <= MAX_DELIVER; attempt++) await runTurn(deps, turn, attempt);

    expect((await findRunByTurn(db.pool, turn.userId, turn.turnId))?.status).toBe('failed');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await reader.stop();
    expect(events).toEqual([]);
  });
});

// The run row is what makes a re-submitted or redelivered turn safe; these live here rather than
// in runs-repository.test.ts so the suite boots one embedded Postgres, not two.
describe('runs repository', () => {
  it('returns the existing run when the same turn is submitted again', async () => {
    const request = newRun();
    const first = await insertRun(db.pool, request);

    const again = await insertRun(db.pool, { ...request, id: randomUUID() });

    expect(first).toMatchObject({ id: request.id, status: 'queued', attempts: 0 });
    expect(again.id).toBe(first.id);
    const { rows } = await db.pool.query('SELECT id FROM orchestrator.runs WHERE turn_id = $1', [
      request.turnId,
    ]);
    expect(rows).toHaveLength(1);
  });

  it("never hands out another user's run for a reused turn id", async () => {
    const request = newRun();
    await insertRun(db.pool, request);

    await expect(insertRun(db.pool, { ...newRun(), turnId: request.turnId })).rejects.toThrow();
    expect(await findRunByTurn(db.pool, randomUUID(), request.turnId)).toBeUndefined();
  });

  it('does not reopen a completed run when a late delivery starts it again', async () => {
    const run = await insertRun(db.pool, newRun());
    await markRunStarted(db.pool, run.id);
    await markRunCompleted(db.pool, run.id, completion('Hello!'));

    await expect(markRunStarted(db.pool, run.id)).rejects.toThrow(/has finished/);

    expect(await findRunByTurn(db.pool, run.userId, run.turnId)).toMatchObject({
      status: 'completed',
      attempts: 1,
      usage: { inputTokens: 12, outputTokens: 2 },
    });
  });
});
