import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { connectTestRedis, type TestDatabase, uniqueNamespace, waitFor } from '@jarvis/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { insertRun, markRunCompleted, markRunStarted } from '../repositories/runs-repository';
import { cancelTurn, type TurnCancellations, watchTurnCancellations } from './cancel-turn';

// Two buses in one namespace stand for two orchestrator replicas: one takes the cancel request,
// the other runs the turn.
let db: TestDatabase;
let front: Bus;
let worker: Bus;
let redis: Redis;
let cancellations: TurnCancellations;

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('orchestrator-cancel');
  front = await connectTestBus(namespace);
  worker = await connectTestBus(namespace);
  redis = connectTestRedis();
  cancellations = watchTurnCancellations(worker, redis);
  await worker.nc.flush();
});

afterAll(async () => {
  await front?.close();
  await worker?.close();
  await redis?.quit();
  await db?.stop();
});

async function newRun() {
  return insertRun(db.pool, {
    id: randomUUID(),
    turnId: randomUUID(),
    userId: randomUUID(),
    conversationId: randomUUID(),
    userMessageId: randomUUID(),
    userMessageAt: new Date().toISOString(),
    userMessageSeq: 1,
    traceId: undefined,
    timeZone: undefined,
  });
}

const cancel = (userId: string, turnId: string) =>
  cancelTurn({ bus: front, pool: db.pool, redis }, { userId, turnId });

describe('cancelTurn', () => {
  it('stops a turn running on another replica at once', async () => {
    const run = await newRun();
    await markRunStarted(db.pool, run.id);
    const running = await cancellations.watch(run.turnId);
    expect(running.signal.aborted).toBe(false);

    expect(await cancel(run.userId, run.turnId)).toEqual({
      turnId: run.turnId,
      runId: run.id,
      status: 'cancelling',
    });

    await waitFor(() => running.signal.aborted, { what: 'the abort' });
    running.release();
  });

  it('stops a queued turn as soon as a worker takes it', async () => {
    const run = await newRun();

    await cancel(run.userId, run.turnId);
    const taken = await cancellations.watch(run.turnId);

    expect(taken.signal.aborted).toBe(true);
    taken.release();
  });

  it('refuses a turn that has ended, and answers not_found for another user', async () => {
    const run = await newRun();
    await markRunCompleted(db.pool, run.id, {
      replyMessageId: randomUUID(),
      provider: 'p',
      model: 'm',
      usage: { inputTokens: 1, outputTokens: 1 },
    });

    expect((await catchBusError(cancel(run.userId, run.turnId))).toInfo()).toEqual({
      code: 'conflict',
      message: 'the turn has already ended (completed)',
    });
    expect((await catchBusError(cancel(randomUUID(), run.turnId))).toInfo()).toEqual({
      code: 'not_found',
      message: 'turn not found',
    });
    const untouched = await cancellations.watch(run.turnId);
    expect(untouched.signal.aborted).toBe(false);
    untouched.release();
  });
});
