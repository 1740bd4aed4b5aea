-- Durable jobs. The scheduler issue adds claiming, firing and missed-run policy on this table.
CREATE TABLE scheduler.jobs (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('once', 'interval', 'cron')),
  title text NOT NULL,
  -- Cron expression, ISO interval or timestamp, depending on kind.
  schedule text NOT NULL,
  time_zone text NOT NULL DEFAULT 'UTC',
  payload jsonb NOT NULL DEFAULT '{}'::jsonb,
  next_run_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_by_user ON scheduler.jobs (user_id, created_at);
CREATE INDEX jobs_due ON scheduler.jobs (next_run_at) WHERE next_run_at IS NOT NULL;
