import type { UsageDayRow, UsagePurpose } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { toNanos, utcDay } from './usage-units';

// All the SQL of usage accounting.

export type RolledUpEvent = {
  id: string;
  userId?: string | undefined;
  provider: string;
  model: string;
  purpose: UsagePurpose;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  at: string;
};

// Adds events to their days' rows, each unless it was added before, in one statement; returns
// how many were new. The markers and the rows change together, so a crash cannot count an event
// twice or lose it. Deliveries racing each other serialise on the markers' primary key, taken in
// id order and the rows in key order, so two batches never wait on each other crosswise.
export async function applyUsageEvents(pool: Pool, events: RolledUpEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const { rows } = await pool.query<{ applied: number }>(
    `WITH e AS (
       SELECT DISTINCT ON (id) * FROM unnest(
         $1::uuid[], $2::date[], $3::uuid[], $4::text[], $5::text[], $6::text[],
         $7::bigint[], $8::bigint[], $9::numeric[]
       ) AS e(id, day, user_id, provider, model, purpose, input_tokens, output_tokens, cost_nanos)
       ORDER BY id
     ), marked AS (
       INSERT INTO model_gateway.usage_events_applied (id) SELECT id FROM e ORDER BY id
       ON CONFLICT (id) DO NOTHING
       RETURNING id
     ), added AS (
       INSERT INTO model_gateway.usage_daily AS d
         (day, user_id, provider, model, purpose, input_tokens, output_tokens, cost_usd, requests)
       SELECT day, user_id, provider, model, purpose, sum(input_tokens), sum(output_tokens),
              sum(cost_nanos) / 1000000000, count(*)
       FROM e WHERE id IN (SELECT id FROM marked)
       GROUP BY day, user_id, provider, model, purpose
       ORDER BY day, user_id, provider, model, purpose
       ON CONFLICT ON CONSTRAINT usage_daily_key DO UPDATE SET
         input_tokens = d.input_tokens + EXCLUDED.input_tokens,
         output_tokens = d.output_tokens + EXCLUDED.output_tokens,
         cost_usd = d.cost_usd + EXCLUDED.cost_usd,
         requests = d.requests + EXCLUDED.requests,
         updated_at = now()
     )
     SELECT count(*)::int AS applied FROM marked`,
    [
      events.map((event) => event.id),
      events.map((event) => utcDay(new Date(event.at))),
      events.map((event) => event.userId ?? null),
      events.map((event) => event.provider),
      events.map((event) => event.model),
      events.map((event) => event.purpose),
      events.map((event) => event.inputTokens),
      events.map((event) => event.outputTokens),
      events.map((event) => String(toNanos(event.costUsd))),
    ],
  );
  return rows[0]?.applied ?? 0;
}

// Forgets the markers of events applied before `olderThanDays` days ago.
export async function pruneAppliedEvents(pool: Pool, olderThanDays: number): Promise<number> {
  const { rowCount } = await pool.query(
    `DELETE FROM model_gateway.usage_events_applied
     WHERE applied_at < now() - make_interval(days => $1)`,
    [olderThanDays],
  );
  return rowCount ?? 0;
}

type DayRow = {
  day: string;
  provider: string;
  model: string;
  purpose: UsagePurpose;
  input_tokens: string;
  output_tokens: string;
  cost_usd: string;
  requests: string;
};

// One user's rows from `from` to `to` (UTC days, both included), newest day first.
export async function listUsageDays(
  pool: Pool,
  userId: string,
  from: string,
  to: string,
): Promise<UsageDayRow[]> {
  const { rows } = await pool.query<DayRow>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, provider, model, purpose,
            input_tokens, output_tokens, cost_usd, requests
     FROM model_gateway.usage_daily
     WHERE user_id = $1 AND day BETWEEN $2 AND $3
     ORDER BY day DESC, provider, model, purpose`,
    [userId, from, to],
  );
  return rows.map((row) => ({
    day: row.day,
    provider: row.provider,
    model: row.model,
    purpose: row.purpose,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    costUsd: Number(row.cost_usd),
    requests: Number(row.requests),
  }));
}
