import type { UsageDayRow, UsagePurpose } from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
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

// Adds one event to its day's row, unless it was added before. False for a repeat. The marker
// and the row change commit together, so a crash between them cannot count an event twice or
// lose it; two deliveries racing each other serialise on the marker's primary key.
export async function applyUsageEvent(pool: Pool, event: RolledUpEvent): Promise<boolean> {
  return withTransaction(pool, async (client) => {
    const marked = await client.query(
      `INSERT INTO model_gateway.usage_events_applied (id) VALUES ($1)
       ON CONFLICT (id) DO NOTHING`,
      [event.id],
    );
    if (marked.rowCount === 0) return false;
    await client.query(
      `INSERT INTO model_gateway.usage_daily AS d
         (day, user_id, provider, model, purpose, input_tokens, output_tokens, cost_usd, requests)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::numeric / 1000000000, 1)
       ON CONFLICT ON CONSTRAINT usage_daily_key DO UPDATE SET
         input_tokens = d.input_tokens + EXCLUDED.input_tokens,
         output_tokens = d.output_tokens + EXCLUDED.output_tokens,
         cost_usd = d.cost_usd + EXCLUDED.cost_usd,
         requests = d.requests + 1,
         updated_at = now()`,
      [
        utcDay(new Date(event.at)),
        event.userId ?? null,
        event.provider,
        event.model,
        event.purpose,
        event.inputTokens,
        event.outputTokens,
        String(toNanos(event.costUsd)),
      ],
    );
    return true;
  });
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
