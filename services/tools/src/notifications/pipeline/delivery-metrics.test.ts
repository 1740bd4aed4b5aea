import { randomUUID } from 'node:crypto';
import { publishUserEvent } from '@jarvis/bus';
import { createMetrics } from '@jarvis/telemetry';
import { metricSample, missionEnded, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolsMetrics } from '../../tools-metrics';
import { putSettings } from '../settings-repository';
import { type PipelineFixture, startPipelineFixture } from './pipeline-fixture';

// The pipeline with its metrics on a registry of the test's own: events on the user event
// stream, real HTTP requests to a local server as the channel.
const registry = createMetrics('tools-test');
let fixture: PipelineFixture;

beforeAll(async () => {
  fixture = await startPipelineFixture('notify-metrics', {
    metrics: createToolsMetrics(registry),
  });
  await fixture.startPipeline();
});

afterAll(async () => {
  await fixture?.stop();
});

async function deliveries(status: string) {
  const text = await registry.registry.metrics();
  return metricSample(text, 'jarvis_notification_deliveries_total', {
    channel: 'webhook',
    status,
    service: 'tools-test',
  });
}

describe('notification delivery metrics', () => {
  it(
    'count deliveries sent, retried, failed and held, by channel',
    { timeout: 30_000 },
    async () => {
      const sent = randomUUID();
      const failing = randomUUID();
      const quiet = randomUUID();
      for (const user of [sent, failing, quiet]) await fixture.addChannels(user);
      const now = Date.now();
      const wall = (offsetHours: number) =>
        new Date(now + offsetHours * 3_600_000).toISOString().slice(11, 16);
      await putSettings(fixture.db.pool, quiet, {
        quietHours: { start: wall(-1), end: wall(1) },
        timeZone: 'UTC',
      });
      const previous = fixture.receiver.answer;
      fixture.receiver.answer = (request) =>
        request.path.startsWith(`/${failing}/`) ? { status: 503 } : previous(request);

      for (const user of [sent, failing, quiet]) {
        await publishUserEvent(
          fixture.bus,
          user,
          `mission:${randomUUID()}:ended`,
          missionEnded('Found.'),
        );
      }

      // maxAttempts 3: the failing one is retried twice, then given up.
      await waitFor(async () => (await fixture.statuses(failing)).failed === 1, {
        what: 'the failing delivery to give up',
        timeoutMs: 20_000,
      });
      await waitFor(async () => (await fixture.statuses(quiet)).held === 1, {
        what: 'the held one',
      });
      fixture.receiver.answer = previous;
      expect(await fixture.statuses(sent)).toEqual({ sent: 1 });
      expect(await deliveries('sent')).toBe(1);
      expect(await deliveries('retried')).toBe(2);
      expect(await deliveries('failed')).toBe(1);
      expect(await deliveries('held')).toBe(1);
    },
  );
});
