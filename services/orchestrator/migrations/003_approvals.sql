-- A risky tool call pauses its run until the user decides; the paused tool loop is kept here, so
-- a decision taken after any restart goes on from where it stopped.
ALTER TABLE orchestrator.runs DROP CONSTRAINT runs_status_check;
ALTER TABLE orchestrator.runs ADD CONSTRAINT runs_status_check
  CHECK (status IN ('queued', 'running', 'waiting_approval', 'completed', 'failed'));

CREATE TABLE orchestrator.approvals (
  id uuid PRIMARY KEY,
  run_id uuid NOT NULL REFERENCES orchestrator.runs (id) ON DELETE CASCADE,
  turn_id uuid NOT NULL,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL,
  tool_call_id text NOT NULL,
  tool_name text NOT NULL,
  arguments jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
  -- What the tool loop needs to go on: its messages, the calls still to run, its counters.
  loop_state jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  decided_at timestamptz,
  UNIQUE (run_id, tool_call_id)
);
CREATE INDEX approvals_by_user ON orchestrator.approvals (user_id, status, created_at DESC);
CREATE INDEX approvals_due ON orchestrator.approvals (expires_at) WHERE status = 'pending';
