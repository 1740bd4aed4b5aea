import { randomUUID } from 'node:crypto';
import { schedulerSchedulesCreate } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRuns } from '../repositories/runs-repository';
import { type SchedulerFixture, startSchedulerFixture } from '../scheduler-fixture';
import { createRunFinisher } from './run-finisher';

let fixture: SchedulerFixture;

beforeAll(async () => {
  fixture = await startSchedulerFixture('scheduler-finisher');
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
});

describe('the run finisher', () => {
  it('writes runs finished together, each once, and tells a run no longer running apart', async () => {
    const userId = randomUUID();
    const { schedule } = await fixture.clientBus.request(schedulerSchedulesCreate, {
      userId,
      userTimeZone: 'UTC',
      schedule: {
        kind: 'interval',
        everyMinutes: 60,
        action: { type: 'remind', text: 'stretch' },
      },
    });
    const now = new Date();
    const runs = await insertRuns(
      fixture.db.pool,
      Array.from({ length: 5 }, (_, index) => ({
        id: randomUUID(),
        scheduleId: schedule.id,
        userId,
        scheduledFor: new Date(now.getTime() - (index + 1) * 3_600_000),
        status: 'running' as const,
        reason: null,
      })),
      now,
      new Date(now.getTime() + 30_000),
    );
    const finisher = createRunFinisher(fixture.db.pool);
    const [first, ...others] = runs;
    if (!first) throw new Error('no runs written');
    const messageId = randomUUID();
    const finished = await Promise.all([
      finisher.finish(first.id, { status: 'fired', messageId }, now),
      ...others.map((run) => finisher.finish(run.id, { status: 'failed', reason: 'gone' }, now)),
    ]);
    expect(finished.map((run) => run?.status)).toEqual([
      'fired',
      'failed',
      'failed',
      'failed',
      'failed',
    ]);
    expect(finished[0]?.messageId).toBe(messageId);
    expect(finished[1]?.reason).toBe('gone');
    // A second delivery of a run finds it done: nothing changes, and it is told so.
    expect(await finisher.finish(first.id, { status: 'failed', reason: 'late' }, now)).toBe(
      undefined,
    );
    expect(
      await fixture.countRows(
        `SELECT count(*) FROM scheduler.runs
          WHERE schedule_id = $1 AND finished_at IS NOT NULL AND lease_until IS NULL`,
        [schedule.id],
      ),
    ).toBe(5);
    expect(
      await fixture.countRows(
        `SELECT count(*) FROM scheduler.runs WHERE id = $1 AND status = 'fired' AND message_id = $2`,
        [first.id, messageId],
      ),
    ).toBe(1);
  });
});
