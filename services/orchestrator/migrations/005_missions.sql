-- Missions: an objective worked on in the background as a plan of tasks, each task a run of its
-- own. The work itself travels on the MISSIONS stream; these rows are what it has come to, so a
-- restart goes on from them.
CREATE TABLE orchestrator.missions (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL,
  objective text NOT NULL,
  status text NOT NULL
    CHECK (status IN ('planning', 'running', 'reporting', 'completed', 'failed', 'cancelled')),
  created_by text NOT NULL CHECK (created_by IN ('user', 'model')),
  source_run_id uuid,
  max_tokens integer NOT NULL,
  max_cost_usd numeric(14, 9) NOT NULL,
  -- Spent by planning, every task and the report, added as each model call answers.
  input_tokens integer NOT NULL DEFAULT 0,
  output_tokens integer NOT NULL DEFAULT 0,
  cost_usd numeric(14, 9) NOT NULL DEFAULT 0,
  report text,
  report_message_id uuid,
  error_code text,
  error_message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX missions_by_user ON orchestrator.missions (user_id, created_at DESC);
CREATE INDEX missions_unfinished ON orchestrator.missions (status)
  WHERE status IN ('planning', 'running', 'reporting');

CREATE TABLE orchestrator.mission_tasks (
  id uuid PRIMARY KEY,
  mission_id uuid NOT NULL REFERENCES orchestrator.missions (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  -- From 1, in plan order; depends_on holds numbers of earlier tasks.
  number integer NOT NULL,
  title text NOT NULL,
  brief text NOT NULL,
  depends_on integer[] NOT NULL DEFAULT '{}',
  -- null: every tool that needs no approval.
  tools text[],
  status text NOT NULL
    CHECK (status IN ('pending', 'queued', 'running', 'completed', 'failed', 'skipped')),
  run_id uuid,
  -- While running: until when its worker is known to be alive (it renews this as it works). A
  -- redelivered task takes over only once it has passed, so a task never runs twice at once.
  lease_until timestamptz,
  result text,
  error_code text,
  error_message text,
  started_at timestamptz,
  finished_at timestamptz,
  UNIQUE (mission_id, number)
);

-- A task runs as a run of its own, so its steps are recorded and read back like a turn's. Its
-- turn_id is the task's id; it answers no message.
ALTER TABLE orchestrator.runs
  ADD COLUMN kind text NOT NULL DEFAULT 'turn' CHECK (kind IN ('turn', 'mission_task')),
  ADD COLUMN mission_id uuid,
  ALTER COLUMN user_message_id DROP NOT NULL;
