import { randomUUID } from 'node:crypto';
import { schedulerSchedulesCreate } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerFixture, startSchedulerFixture } from '../scheduler-fixture';
import { extendLeases, finishRuns, insertRuns, takeOverExpiredRuns } from './runs-repository';

let fixture: SchedulerFixture;

beforeAll(async () => {
  fixture = await startSchedulerFixture('scheduler-leases');
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
});

async function leaseOf(id: string): Promise<number | undefined> {
  const { rows } = await fixture.db.pool.query<{ lease_until: Date | null }>(
    'SELECT lease_until FROM scheduler.runs WHERE id = $1',
    [id],
  );
  return rows[0]?.lease_until?.getTime();
}

describe('extendLeases', () => {
  it('keeps the leases of runs still held under their attempt, and no other', async () => {
    const userId = randomUUID();
    const { schedule } = await fixture.clientBus.request(schedulerSchedulesCreate, {
      userId,
      userTimeZone: 'UTC',
      schedule: { kind: 'interval', everyMinutes: 60, action: { type: 'remind', text: 'tea' } },
    });
    const now = new Date();
    const write = (hoursAgo: number, leaseUntil: Date) =>
      insertRuns(
        fixture.db.pool,
        [
          {
            id: randomUUID(),
            scheduleId: schedule.id,
            userId,
            scheduledFor: new Date(now.getTime() - hoursAgo * 3_600_000),
            status: 'running',
            reason: null,
          },
        ],
        now,
        leaseUntil,
      ).then(([run]) => {
        if (!run) throw new Error('no run written');
        return run;
      });
    const held = await write(1, new Date(now.getTime() + 5_000));
    const postponed = await write(2, new Date(now.getTime() + 600_000));
    const finished = await write(3, new Date(now.getTime() + 5_000));
    // Its lease ran out, and another process took it over (this test, or the fixture's engine).
    const lost = await write(4, new Date(now.getTime() - 1_000));
    await takeOverExpiredRuns(fixture.db.pool, now, new Date(now.getTime() + 5_000), 10);
    await finishRuns(fixture.db.pool, [
      { id: finished.id, outcome: { status: 'fired' }, finishedAt: now },
    ]);

    const leaseUntil = new Date(now.getTime() + 60_000);
    const kept = await extendLeases(
      fixture.db.pool,
      [held, postponed, finished, lost].map(({ id, attempts }) => ({ id, attempts })),
      leaseUntil,
    );
    expect([...kept].sort()).toEqual([held.id, postponed.id].sort());
    expect(await leaseOf(held.id)).toBe(leaseUntil.getTime());
    // A later lease (a postponed delivery's) is not shortened.
    expect(await leaseOf(postponed.id)).toBe(now.getTime() + 600_000);
    expect(await leaseOf(finished.id)).toBeUndefined();
    expect(await leaseOf(lost.id)).not.toBe(leaseUntil.getTime());
    expect(await extendLeases(fixture.db.pool, [], leaseUntil)).toEqual(new Set());
  });
});
