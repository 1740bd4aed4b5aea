import { randomUUID } from 'node:crypto';
import { type Bus, publishUserEvent } from '@jarvis/bus';
import { connectTestBus } from '@jarvis/bus/testing';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { reminderFired, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createWebhookSender } from '../senders/webhook';
import { type NotificationPipeline, startNotificationPipeline } from './pipeline';
import { type PipelineFixture, startPipelineFixture } from './pipeline-fixture';

// The issue's recovery test: 1,000 reminders fall due together while the users' channel (a
// signed webhook to a local server) answers 503 for its first 30 seconds. Every one reaches it
// once it recovers, and none twice: the receiver counts the successful requests per event id.
// Two replicas of the pipeline share the work, as two tools services would.

const REMINDERS = 1_000;
const USERS = 200;
const DOWN_MS = 30_000;

let fixture: PipelineFixture;
let replicaBus: Bus | undefined;
let replica: NotificationPipeline | undefined;

beforeAll(async () => {
  fixture = await startPipelineFixture('notify-recovery', {
    senders: new Map([
      [
        'webhook',
        createWebhookSender({
          guard: createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1')),
        }),
      ],
    ]),
    // Enough attempts to outlast the outage; retries at most 8 s apart (and up to a sweep, 1 s,
    // later), so that the last ones come soon after it ends.
    maxAttempts: 15,
    retry: { baseDelayMs: 1_000, maxDelayMs: 8_000 },
    sendTimeoutMs: 5_000,
    sweepIntervalMs: 1_000,
    overdueMs: 30_000,
  });
  await fixture.startPipeline();
  replicaBus = await connectTestBus(fixture.bus.namespace);
  replica = await startNotificationPipeline({ ...fixture.deps, bus: replicaBus });
});

afterAll(async () => {
  await replica?.stop();
  await replicaBus?.close();
  await fixture?.stop();
});

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

it(
  'delivers 1,000 reminders due together once each after a 30 s outage of their channel',
  {
    timeout: 120_000,
  },
  async () => {
    const users = Array.from({ length: USERS }, () => randomUUID());
    for (const userId of users) await fixture.addChannels(userId);
    const { receiver } = fixture;
    const start = Date.now();
    const recoversAt = start + DOWN_MS;
    receiver.answer = () => (Date.now() < recoversAt ? { status: 503 } : { status: 200 });

    const publishedAt = new Map<string, number>();
    const reminders = Array.from({ length: REMINDERS }, (_, index) =>
      reminderFired(`Reminder ${index} of ${users[index % USERS] ?? ''}`),
    );
    // As the scheduler's deliveries publish them: many at once.
    for (let offset = 0; offset < REMINDERS; offset += 50) {
      await Promise.all(
        reminders.slice(offset, offset + 50).map(async ({ id, event }, index) => {
          const userId = users[(offset + index) % USERS] ?? '';
          publishedAt.set(id, Date.now());
          await publishUserEvent(fixture.bus, userId, id, event);
        }),
      );
    }
    const publishedMs = Date.now() - start;

    const delivered = () => receiver.requests.filter((request) => request.status === 200);
    await waitFor(() => new Set(delivered().map((request) => request.body.id)).size === REMINDERS, {
      timeoutMs: 100_000,
      intervalMs: 250,
      what: 'every reminder delivered',
    });
    const allDeliveredMs = Date.now() - start;
    // A second copy would come within a retry's delay: wait longer than the longest.
    await new Promise((resolve) => setTimeout(resolve, 9_000));

    const perId = new Map<string, number>();
    for (const request of delivered())
      perId.set(request.body.id, (perId.get(request.body.id) ?? 0) + 1);
    const twice = [...perId.values()].filter((count) => count > 1).length;
    const refused = receiver.requests.filter((request) => request.status === 503).length;
    const statuses = await fixture.db.pool.query<{ status: string; count: string }>(
      'SELECT status, count(*) AS count FROM tools.notification_deliveries GROUP BY status',
    );
    const latencies = delivered()
      .map((request) => request.at - (publishedAt.get(request.body.id) ?? Number.NaN))
      .sort((a, b) => a - b);
    const afterRecovery = delivered()
      .map((request) => request.at - recoversAt)
      .sort((a, b) => a - b);
    console.log(
      [
        `recovery: ${REMINDERS} reminders for ${USERS} users published in ${publishedMs} ms; channel answered 503 for ${DOWN_MS} ms`,
        `requests: ${receiver.requests.length} (${refused} answered 503, ${delivered().length} answered 200); distinct ids delivered: ${perId.size}; delivered twice: ${twice}`,
        `deliveries: ${statuses.rows.map((row) => `${row.status} ${row.count}`).join(', ')}; all delivered ${allDeliveredMs} ms after the first publish`,
        `latency event -> channel request: p50 ${percentile(latencies, 0.5)} ms, p95 ${percentile(latencies, 0.95)} ms, max ${latencies.at(-1)} ms`,
        `after the channel recovered: p50 ${percentile(afterRecovery, 0.5)} ms, p95 ${percentile(afterRecovery, 0.95)} ms, last ${afterRecovery.at(-1)} ms`,
      ].join('\n'),
    );

    expect(perId.size).toBe(REMINDERS);
    expect(twice).toBe(0);
    expect(delivered()).toHaveLength(REMINDERS);
    // Nothing got through while it was down, and it was tried meanwhile.
    expect(delivered().every((request) => request.at >= recoversAt)).toBe(true);
    expect(refused).toBeGreaterThanOrEqual(REMINDERS);
    expect(statuses.rows).toEqual([{ status: 'sent', count: String(REMINDERS) }]);
  },
);
