-- Model usage per user, model, purpose and UTC day, rolled up from the usage events on
-- JetStream. Today's live totals (what the budgets check) are in Redis; this is the history.
CREATE TABLE model_gateway.usage_daily (
  day date NOT NULL,
  -- Null for system work that names no user.
  user_id uuid,
  provider text NOT NULL,
  model text NOT NULL,
  purpose text NOT NULL CHECK (purpose IN ('chat', 'utility', 'embed')),
  input_tokens bigint NOT NULL DEFAULT 0,
  output_tokens bigint NOT NULL DEFAULT 0,
  -- Summed from each call's cost rounded to the nano-dollar, as Redis counts it.
  cost_usd numeric(20, 9) NOT NULL DEFAULT 0,
  requests bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- NULLS NOT DISTINCT: the calls of no user add up in one row per key too.
  CONSTRAINT usage_daily_key UNIQUE NULLS NOT DISTINCT (user_id, day, provider, model, purpose)
);

-- Events already rolled up, so a redelivered event is counted once. Written in the same
-- transaction as the rollup; pruned once no redelivery can still arrive.
CREATE TABLE model_gateway.usage_events_applied (
  id uuid PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_events_applied_by_time ON model_gateway.usage_events_applied (applied_at);
