import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { schedulerJobsList } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { startTestDatabase, type TestDatabase, uniqueNamespace } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerHandlers } from './handlers';

let db: TestDatabase;
let serverBus: Bus;
let clientBus: Bus;
let subscriptions: ReturnType<typeof registerHandlers>;

beforeAll(async () => {
  db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'scheduler',
    directory: new URL('../migrations', import.meta.url),
  });
  const namespace = uniqueNamespace('scheduler');
  serverBus = await connectTestBus(namespace);
  clientBus = await connectTestBus(namespace);
  subscriptions = registerHandlers(serverBus, db.pool);
  await serverBus.nc.flush();
});

afterAll(async () => {
  for (const subscription of subscriptions ?? []) subscription.unsubscribe();
  await clientBus?.close();
  await serverBus?.close();
  await db?.stop();
});

type JobRow = {
  id: string;
  userId: string;
  kind: 'once' | 'interval' | 'cron';
  title: string;
  schedule: string;
  nextRunAt: string | null;
  createdAt: string;
};

async function insertJob(job: Omit<JobRow, 'id'>): Promise<string> {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO scheduler.jobs (id, user_id, kind, title, schedule, next_run_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [id, job.userId, job.kind, job.title, job.schedule, job.nextRunAt, job.createdAt],
  );
  return id;
}

describe('scheduler.jobs.list', () => {
  it('answers an empty list for a user without jobs', async () => {
    expect(await clientBus.request(schedulerJobsList, { userId: randomUUID() })).toEqual({
      jobs: [],
    });
  });

  it("lists only the user's own jobs, oldest first", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    // Inserted out of order, so the answer's order comes from created_at and not from insertion.
    const standup = await insertJob({
      userId: alice,
      kind: 'cron',
      title: 'standup reminder',
      schedule: '0 9 * * 1-5',
      nextRunAt: '2030-01-07T09:00:00.000Z',
      createdAt: '2025-03-02T10:00:00.000Z',
    });
    const water = await insertJob({
      userId: alice,
      kind: 'interval',
      title: 'drink water',
      schedule: 'PT2H',
      nextRunAt: null,
      createdAt: '2025-03-01T08:30:00.000Z',
    });
    const bobsJob = await insertJob({
      userId: bob,
      kind: 'once',
      title: 'call the dentist',
      schedule: '2030-05-01T12:00:00Z',
      nextRunAt: '2030-05-01T12:00:00.000Z',
      createdAt: '2025-03-01T09:00:00.000Z',
    });

    const aliceJobs = await clientBus.request(schedulerJobsList, { userId: alice });
    const bobJobs = await clientBus.request(schedulerJobsList, { userId: bob });

    expect(aliceJobs.jobs).toEqual([
      {
        id: water,
        kind: 'interval',
        title: 'drink water',
        nextRunAt: null,
        createdAt: '2025-03-01T08:30:00.000Z',
      },
      {
        id: standup,
        kind: 'cron',
        title: 'standup reminder',
        nextRunAt: '2030-01-07T09:00:00.000Z',
        createdAt: '2025-03-02T10:00:00.000Z',
      },
    ]);
    expect(bobJobs.jobs).toEqual([
      {
        id: bobsJob,
        kind: 'once',
        title: 'call the dentist',
        nextRunAt: '2030-05-01T12:00:00.000Z',
        createdAt: '2025-03-01T09:00:00.000Z',
      },
    ]);
  });

  it('answers bad_request to a userId that is not a uuid', async () => {
    const reply = await clientBus.nc.request(
      clientBus.subject(schedulerJobsList.subject),
      new TextEncoder().encode(JSON.stringify({ userId: 'alice' })),
      { timeout: 5_000 },
    );

    expect(JSON.parse(new TextDecoder().decode(reply.data))).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining('userId') },
    });
  });

  it('rejects the same request in the client with a BusError', async () => {
    const error = await clientBus.request(schedulerJobsList, { userId: 'alice' }).then(
      () => undefined,
      (failure: unknown) => failure,
    );

    expect(error).toBeInstanceOf(BusError);
    expect(error instanceof BusError && error.code).toBe('bad_request');
  });
});
