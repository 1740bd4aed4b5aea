import { randomUUID } from 'node:crypto';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { insertRun } from '../repositories/runs-repository';
import { createStepRecorder } from './agent-loop';

let db: TestDatabase;

beforeAll(async () => {
  db = await startDatabaseFixture();
});

afterAll(async () => {
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
