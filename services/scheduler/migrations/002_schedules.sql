-- Schedules and their runs replace the jobs table, which nothing ever wrote to.
DROP TABLE scheduler.jobs;

CREATE TABLE scheduler.schedules (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('once', 'cron', 'interval')),
  name text,
  -- {type: remind, text} | {type: prompt, instruction} | {type: mission, objective, tasks?}
  action jsonb NOT NULL,
  at timestamptz,
  cron text,
  every_minutes integer,
  -- The zone of a cron rule's wall clock, and the one its times are told in for every kind.
  time_zone text NOT NULL,
  -- Null: the user's persistent conversation.
  conversation_id uuid,
  missed_policy text NOT NULL CHECK (missed_policy IN ('skip', 'run_once', 'run_all')),
  missed_max_runs integer NOT NULL,
  grace_minutes integer NOT NULL,
  start_at timestamptz,
  end_at timestamptz,
  max_runs integer,
  -- Occurrences of the rule claimed to run (fired or failed in the end), against max_runs.
  run_count integer NOT NULL DEFAULT 0,
  -- The rule's next occurrence not yet handled: the engine's cursor (null when the rule has no
  -- more). A snooze adds one occurrence of its own, snooze_at; the schedule is due at the
  -- earlier of the two.
  next_run_at timestamptz,
  snooze_at timestamptz,
  status text NOT NULL CHECK (status IN ('active', 'paused', 'ended')),
  created_by text NOT NULL CHECK (created_by IN ('user', 'model')),
  source_run_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'once') = (at IS NOT NULL)),
  CHECK ((kind = 'cron') = (cron IS NOT NULL)),
  CHECK ((kind = 'interval') = (every_minutes IS NOT NULL))
);
-- The engine's wake-up and claim: the earliest due time over active schedules. LEAST skips nulls.
CREATE INDEX schedules_due ON scheduler.schedules ((LEAST(next_run_at, snooze_at)))
  WHERE status = 'active';
CREATE INDEX schedules_by_user ON scheduler.schedules (user_id, created_at);

-- One row per occurrence, written before its action starts: the unique key is what makes an
-- occurrence fire once, whichever replica claims it and however often its delivery is retried.
CREATE TABLE scheduler.runs (
  id uuid PRIMARY KEY,
  schedule_id uuid NOT NULL REFERENCES scheduler.schedules (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  scheduled_for timestamptz NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'fired', 'skipped', 'missed', 'failed')),
  started_at timestamptz,
  finished_at timestamptz,
  -- What the action produced: a reminder's message, a prompt's run, a mission.
  message_id uuid,
  run_id uuid,
  mission_id uuid,
  reason text,
  -- Deliveries begun; a run still running past lease_until was left by a crashed process.
  attempts integer NOT NULL DEFAULT 0,
  lease_until timestamptz,
  UNIQUE (schedule_id, scheduled_for)
);
CREATE INDEX runs_leases ON scheduler.runs (lease_until) WHERE status = 'running';
-- The daily cap of agent work counts the runs a user's schedules started in the last 24 hours.
CREATE INDEX runs_by_user ON scheduler.runs (user_id, started_at);
