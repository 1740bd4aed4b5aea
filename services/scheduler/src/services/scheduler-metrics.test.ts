import { randomUUID } from 'node:crypto';
import { type ScheduleFields, schedulerSchedulesCreate } from '@jarvis/contracts';
import { createMetrics } from '@jarvis/telemetry';
import { metricSample, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerFixture, startSchedulerFixture } from '../scheduler-fixture';
import { createSchedulerMetrics } from './scheduler-metrics';

let fixture: SchedulerFixture;

beforeAll(async () => {
  // Memory as its own process, where reminders are posted.
  fixture = await startSchedulerFixture('scheduler-metrics', { services: ['memory'] });
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
});

async function create(userId: string, schedule: ScheduleFields) {
  return (
    await fixture.clientBus.request(schedulerSchedulesCreate, {
      userId,
      userTimeZone: 'UTC',
      schedule,
    })
  ).schedule;
}

describe('scheduler metrics', () => {
  it(
    'count each occurrence once by action type and status, and time how late the fired ones were',
    {
      timeout: 60_000,
    },
    async () => {
      const userId = randomUUID();
      await create(userId, {
        kind: 'once',
        at: new Date(Date.now() + 1_000).toISOString(),
        action: { type: 'remind', text: 'stretch your legs' },
      });
      // Hourly, and no scheduler ran for the last 3 hours: the older occurrences are skipped.
      await create(userId, {
        kind: 'interval',
        everyMinutes: 60,
        startAt: new Date(Date.now() + 3_600_000).toISOString(),
        graceMinutes: 150,
        missedPolicy: 'skip',
        action: { type: 'remind', text: 'drink water' },
      });
      // Due half an hour ago, past its grace window of 10 minutes: missed.
      const late = await create(userId, {
        kind: 'once',
        at: new Date(Date.now() + 3_600_000).toISOString(),
        graceMinutes: 10,
        action: { type: 'remind', text: 'too late' },
      });
      await fixture.db.pool.query(
        `UPDATE scheduler.schedules
          SET start_at = start_at - interval '3 hours 2 minutes',
              next_run_at = next_run_at - interval '3 hours 2 minutes'
        WHERE user_id = $1 AND kind = 'interval'`,
        [userId],
      );
      await fixture.db.pool.query(
        `UPDATE scheduler.schedules
          SET at = at - interval '90 minutes', next_run_at = next_run_at - interval '90 minutes'
        WHERE id = $1`,
        [late.id],
      );
      const metrics = createMetrics('scheduler-test');

      await fixture.startEngine({}, createSchedulerMetrics(metrics));

      // Once the reminder due in a second has fired and nothing is being delivered.
      const byStatus = await waitFor(
        async () => {
          const { rows } = await fixture.db.pool.query<{ status: string; runs: number }>(
            `SELECT status, count(*)::int AS runs FROM scheduler.runs WHERE user_id = $1
            GROUP BY status`,
            [userId],
          );
          const counts = Object.fromEntries(rows.map((row) => [row.status, row.runs]));
          return counts.running === undefined && (counts.fired ?? 0) >= 1 ? counts : undefined;
        },
        { what: 'every occurrence settled', timeoutMs: 20_000 },
      );
      expect(byStatus).toMatchObject({
        fired: expect.any(Number),
        skipped: expect.any(Number),
        missed: 1,
      });

      const text = await metrics.registry.metrics();
      // A series' value by its name and exact labels (the service's added).
      const sample = (name: string, labels: Record<string, string>) =>
        metricSample(text, name, { ...labels, service: 'scheduler-test' });
      for (const [status, runs] of Object.entries(byStatus)) {
        const counted = sample('jarvis_schedule_occurrences_total', {
          action_type: 'remind',
          status,
        });
        expect(counted, status).toBe(runs);
      }
      const lateness = 'jarvis_schedule_fire_lateness_seconds';
      expect(sample(`${lateness}_count`, { action_type: 'remind' })).toBe(byStatus.fired);
      // The reminder due in a second fired within a few: its bucket counts it.
      expect(
        sample(`${lateness}_bucket`, { action_type: 'remind', le: '5' }),
      ).toBeGreaterThanOrEqual(1);
    },
  );
});
