-- Fact extraction: one row per turn (its run), written when the turn's extraction finished,
-- was skipped or gave up. A redelivered job that finds its row does nothing twice, and the user
-- or an operator can see what each turn added, changed or closed, or why it added nothing.
CREATE TABLE memory.extractions (
  run_id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('done', 'skipped', 'failed')),
  -- What was applied, and what was ignored and why: [{op, factId?, newFactId?, ignored?, ...}].
  operations jsonb NOT NULL DEFAULT '[]',
  -- Why nothing was applied (skipped or failed).
  reason text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extractions_by_user ON memory.extractions (user_id, created_at);
