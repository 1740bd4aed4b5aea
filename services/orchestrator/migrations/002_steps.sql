-- What a run did, step by step: recall, each model call, each tool call, each memory write,
-- and the guardrail or error that ended it. Steps of a redelivered run keep their attempt, so
-- a crash shows as an attempt that stops and another that starts over.
CREATE TABLE orchestrator.run_steps (
  id uuid PRIMARY KEY,
  run_id uuid NOT NULL REFERENCES orchestrator.runs (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  attempt integer NOT NULL,
  seq integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('recall', 'model', 'tool', 'guardrail', 'error')),
  -- The tool's or model's name; the guardrail that tripped.
  name text NOT NULL,
  status text NOT NULL CHECK (status IN ('ok', 'error')),
  -- Tool arguments, or what the model was asked (message and tool counts, never the prompt).
  input jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- A summary of the result: capped text, counts, token usage.
  output jsonb NOT NULL DEFAULT '{}'::jsonb,
  error text,
  input_tokens integer NOT NULL DEFAULT 0,
  output_tokens integer NOT NULL DEFAULT 0,
  cost_usd numeric(14, 9) NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  UNIQUE (run_id, attempt, seq)
);
CREATE INDEX run_steps_by_run ON orchestrator.run_steps (run_id, attempt, seq);

-- The run as a whole: what the context was made of, and what it cost.
ALTER TABLE orchestrator.runs
  ADD COLUMN context jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN cost_usd numeric(14, 9) NOT NULL DEFAULT 0;
