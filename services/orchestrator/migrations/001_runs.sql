-- One run per turn. turn_id is the idempotency key: a re-submitted or redelivered turn finds its
-- run here instead of starting a second one.
CREATE TABLE orchestrator.runs (
  id uuid PRIMARY KEY,
  turn_id uuid NOT NULL UNIQUE,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL,
  user_message_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  reply_message_id uuid,
  reply_content text,
  provider text,
  model text,
  input_tokens integer NOT NULL DEFAULT 0,
  output_tokens integer NOT NULL DEFAULT 0,
  error_code text,
  error_message text,
  trace_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX runs_by_user ON orchestrator.runs (user_id, created_at DESC);
CREATE INDEX runs_by_conversation ON orchestrator.runs (conversation_id, created_at DESC);
