import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { memoryAppend, type StoredMessage, TURNS_STREAM, turnRequested } from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import {
  connectTestRedis,
  startRedisServer,
  type TestDatabase,
  uniqueNamespace,
  waitFor,
} from '@jarvis/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDatabaseFixture } from '../database-fixture';
import { findRunByTurn } from '../repositories/runs-repository';
import { ensureTurnQueue } from '../services-fixture';
import { startSubmissionSweeper } from './submission-sweeper';
import { type SubmitDeps, submitTurn } from './submit-turn';

let db: TestDatabase;
let bus: Bus;
let memory: Bus;
let redis: Redis;
let deps: SubmitDeps;
// What the stand-in for memory stored, by idempotency key: an append of a key stored before
// answers the message stored then, as memory's does.
const stored = new Map<string, { message: StoredMessage; seq: number }>();

beforeAll(async () => {
  db = await startDatabaseFixture();
  const namespace = uniqueNamespace('orchestrator');
  bus = await connectTestBus(namespace);
  memory = await connectTestBus(namespace);
  memory.serve(memoryAppend, async (request) => {
    const key = request.idempotencyKey ?? randomUUID();
    const existing = stored.get(key);
    if (existing) return { ...existing, isDuplicate: true };
    const message: StoredMessage = {
      id: randomUUID(),
      conversationId: request.conversationId ?? randomUUID(),
      role: request.role,
      content: request.content,
      createdAt: new Date().toISOString(),
    };
    const seq = stored.size + 1;
    stored.set(key, { message, seq });
    return { message, seq, isDuplicate: false };
  });
  await memory.nc.flush();
  await ensureTurnQueue(bus);
  redis = connectTestRedis();
  deps = { bus, pool: db.pool, redis };
});

afterAll(async () => {
  await memory?.close();
  await bus?.close();
  await redis?.quit();
  await db?.stop();
});

function submission(message: string) {
  return {
    userId: randomUUID(),
    message,
    turnId: randomUUID(),
    stream: false,
  };
}

async function countSubmissions(turnId: string): Promise<number> {
  const { rows } = await db.pool.query(
    'SELECT 1 FROM orchestrator.turn_submissions WHERE turn_id = $1',
    [turnId],
  );
  return rows.length;
}

describe('submitTurn', () => {
  it('refuses at once, storing nothing, while its Redis is down', async () => {
    const server = await startRedisServer();
    const downRedis = new Redis(server.url, { maxRetriesPerRequest: 1 });
    downRedis.on('error', () => {});
    try {
      await waitFor(() => downRedis.status === 'ready' || undefined);
      await server.stop();
      await waitFor(() => downRedis.status !== 'ready' || undefined);
      const request = submission('are you there?');

      const startedAt = Date.now();
      const error = await catchBusError(submitTurn({ ...deps, redis: downRedis }, request));

      expect(Date.now() - startedAt).toBeLessThan(1_000);
      expect(error).toMatchObject({
        code: 'unavailable',
        message: 'the short-lived state store (Redis) is unavailable',
      });
      expect(stored.has(`turn:${request.turnId}:user`)).toBe(false);
      expect(await countSubmissions(request.turnId)).toBe(0);
    } finally {
      downRedis.disconnect();
      await server.stop();
    }
  });

  it('answers the same turn for the same request again, and refuses another message', async () => {
    const request = submission('what is on today?');

    const first = await submitTurn(deps, request);
    const again = await submitTurn(deps, request);
    const error = await catchBusError(submitTurn(deps, { ...request, message: 'something else' }));

    expect(again).toEqual(first);
    expect(error.code).toBe('idempotency_key_reused');
    expect(stored.get(`turn:${request.turnId}:user`)?.message.content).toBe('what is on today?');
    expect([...stored.values()].some((entry) => entry.message.content === 'something else')).toBe(
      false,
    );
  });

  it('queues the turn of a submit that died after storing its message', async () => {
    const request = submission('remind me of the dentist');
    const crashing: SubmitDeps = {
      ...deps,
      onStep: (step) => {
        if (step === 'message_stored') throw new Error('the process died here');
      },
    };
    await expect(submitTurn(crashing, request)).rejects.toThrow('the process died here');
    expect(await findRunByTurn(db.pool, request.userId, request.turnId)).toBeUndefined();

    const sweeper = startSubmissionSweeper(
      { ...deps, logger: createLogger('orchestrator-test', 'silent') },
      { intervalMs: 100, staleMs: 0 },
    );
    try {
      const run = await waitFor(() => findRunByTurn(db.pool, request.userId, request.turnId));
      expect(run).toMatchObject({
        status: 'queued',
        userMessageId: stored.get(`turn:${request.turnId}:user`)?.message.id,
      });
      const { rows } = await waitFor(async () => {
        const found = await db.pool.query<{ request: unknown }>(
          `SELECT request FROM orchestrator.turn_submissions
           WHERE turn_id = $1 AND queued_at IS NOT NULL`,
          [request.turnId],
        );
        return found.rows.length > 0 ? found : undefined;
      });
      // The message's text is not kept once the turn is queued.
      expect(rows).toEqual([{ request: null }]);
      const queued = await (await bus.nc.jetstreamManager()).streams.getMessage(
        bus.streamName(TURNS_STREAM),
        { last_by_subj: bus.subject(turnRequested.subject) },
      );
      // The turn still carries the text, taken from the submission's recorded request.
      expect(queued.json()).toMatchObject({
        turnId: request.turnId,
        runId: run.id,
        message: 'remind me of the dentist',
      });
    } finally {
      sweeper.stop();
    }
  });
});
