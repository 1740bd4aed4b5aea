import { randomUUID } from 'node:crypto';
import { publishWork } from '@jarvis/bus';
import { MODEL_USAGE_STREAM, modelUsageRecorded } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger, startUsageFixture, type UsageFixture, usageEvent } from './usage-fixture';
import { createUsageMeter, type UsageMeter } from './usage-meter';
import { applyUsageEvents, pruneAppliedEvents } from './usage-repository';
import { startUsageRollup } from './usage-rollup';

let fixture: UsageFixture;
let pool: Pool;
let meter: UsageMeter;
let rollup: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  fixture = await startUsageFixture({ label: 'usage-rollup', withDatabase: true });
  if (!fixture.db) throw new Error('the fixture has no database');
  pool = fixture.db.pool;
  rollup = await startUsageRollup({ bus: fixture.bus, pool, logger: silentLogger });
  meter = createUsageMeter({
    redis: fixture.redis,
    bus: fixture.bus,
    limits: { dailyTokens: 0, dailyCostUsd: 0, requestsPerMinute: 0 },
    logger: silentLogger,
  });
});

afterAll(async () => {
  await meter?.stop();
  await rollup?.stop();
  await fixture?.stop();
});

type Row = {
  day: string;
  user_id: string | null;
  provider: string;
  model: string;
  purpose: string;
  input_tokens: string;
  output_tokens: string;
  cost_usd: string;
  requests: string;
};

async function rowsOf(userId: string | null, model: string): Promise<Row[]> {
  const { rows } = await pool.query<Row>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, user_id, provider, model, purpose,
            input_tokens, output_tokens, cost_usd, requests
     FROM model_gateway.usage_daily
     WHERE user_id IS NOT DISTINCT FROM $1 AND model = $2
     ORDER BY day, purpose`,
    [userId, model],
  );
  return rows;
}

// Every published event acked: the work queue keeps none.
async function waitForRollup(): Promise<void> {
  const jsm = await fixture.bus.nc.jetstreamManager();
  const stream = fixture.bus.streamName(MODEL_USAGE_STREAM);
  await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 0, {
    what: 'the rollup to ack every event',
  });
}

describe('the usage rollup', () => {
  it('sums recorded calls per user, UTC day, provider, model and purpose', async () => {
    const userId = randomUUID();
    const model = `model-${randomUUID()}`;
    const events = [
      usageEvent({ userId, model, at: '2025-03-01T23:59:59.000Z', inputTokens: 10, costUsd: 0.5 }),
      usageEvent({ userId, model, at: '2025-03-01T08:00:00.000Z', inputTokens: 5, costUsd: 0.25 }),
      usageEvent({ userId, model, at: '2025-03-02T00:00:00.000Z', inputTokens: 1 }),
      usageEvent({ userId, model, purpose: 'embed', at: '2025-03-01T12:00:00.000Z' }),
      // No user: system work, in a row of its own, summed like the others.
      usageEvent({ model, at: '2025-03-01T12:00:00.000Z', outputTokens: 3, costUsd: 0 }),
      usageEvent({ model, at: '2025-03-01T13:00:00.000Z', outputTokens: 4, costUsd: 0 }),
    ];

    for (const event of events) await meter.record(event);
    await waitForRollup();

    const base = { user_id: userId, provider: 'openai', model };
    expect(await rowsOf(userId, model)).toEqual([
      {
        ...base,
        day: '2025-03-01',
        purpose: 'chat',
        input_tokens: '15',
        output_tokens: '40',
        cost_usd: '0.750000000',
        requests: '2',
      },
      {
        ...base,
        day: '2025-03-01',
        purpose: 'embed',
        input_tokens: '100',
        output_tokens: '20',
        cost_usd: '0.001000000',
        requests: '1',
      },
      {
        ...base,
        day: '2025-03-02',
        purpose: 'chat',
        input_tokens: '1',
        output_tokens: '20',
        cost_usd: '0.001000000',
        requests: '1',
      },
    ]);
    expect(await rowsOf(null, model)).toEqual([
      expect.objectContaining({ day: '2025-03-01', output_tokens: '7', requests: '2' }),
    ]);
  });

  it('counts an event delivered twice once, in batches or alone', async () => {
    const userId = randomUUID();
    const model = `model-${randomUUID()}`;
    const event = usageEvent({ userId, model, inputTokens: 7 });
    const other = usageEvent({ userId, model, inputTokens: 2 });

    // Stream messages with the same event, past JetStream's own de-duplication: what a
    // redelivery after a lost ack, a republish after the duplicate window, or a retry batched
    // with other events looks like. Alone is how gateways before batches published.
    await publishWork(fixture.bus, modelUsageRecorded, { events: [event] }, randomUUID());
    await publishWork(fixture.bus, modelUsageRecorded, { events: [other, event] }, randomUUID());
    await publishWork(fixture.bus, modelUsageRecorded, event, randomUUID());
    await waitForRollup();

    expect(await rowsOf(userId, model)).toEqual([
      expect.objectContaining({ input_tokens: '9', requests: '2' }),
    ]);
  });

  it('applies each event once even when batches that share some race each other', async () => {
    const userId = randomUUID();
    const model = `model-${randomUUID()}`;
    const [a, b, c] = [3, 5, 11].map((inputTokens) => usageEvent({ userId, model, inputTokens }));
    if (!a || !b || !c) throw new Error('three events expected');
    const batches = [[a, b], [b, c], [c, a], [a, b, c], [b]];

    const applied = await Promise.all(
      [...batches, ...batches].map((events) => applyUsageEvents(pool, events)),
    );

    expect(applied.reduce((sum, count) => sum + count, 0)).toBe(3);
    expect(await rowsOf(userId, model)).toEqual([
      expect.objectContaining({ input_tokens: '19', requests: '3' }),
    ]);
  });

  it('rolls up what was published while it was stopped', async () => {
    const userId = randomUUID();
    const model = `model-${randomUUID()}`;
    await rollup?.stop();
    rollup = undefined;

    await meter.record(usageEvent({ userId, model, inputTokens: 11 }));
    expect(await rowsOf(userId, model)).toEqual([]);
    rollup = await startUsageRollup({ bus: fixture.bus, pool, logger: silentLogger });
    await waitForRollup();

    expect(await rowsOf(userId, model)).toEqual([
      expect.objectContaining({ input_tokens: '11', requests: '1' }),
    ]);
  });

  it('prunes only the markers older than the redelivery horizon', async () => {
    const old = randomUUID();
    const recent = randomUUID();
    await applyUsageEvents(pool, [
      usageEvent({ id: old, model: 'prune-test' }),
      usageEvent({ id: recent, model: 'prune-test' }),
    ]);
    await pool.query(
      `UPDATE model_gateway.usage_events_applied SET applied_at = now() - interval '8 days'
       WHERE id = $1`,
      [old],
    );

    await pruneAppliedEvents(pool, 7);

    const { rows } = await pool.query<{ id: string }>(
      'SELECT id FROM model_gateway.usage_events_applied WHERE id = ANY($1)',
      [[old, recent]],
    );
    expect(rows).toEqual([{ id: recent }]);
  });
});
