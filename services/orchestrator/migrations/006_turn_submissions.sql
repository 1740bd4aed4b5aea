-- A turn's submission, recorded before its message is stored: the outbox that makes storing the
-- message, recording the run and queueing the turn one unit. A submission still unqueued a while
-- later belongs to a submit that died between those steps, and a sweep finishes it (each step is
-- idempotent on the turn id).
CREATE TABLE orchestrator.turn_submissions (
  turn_id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  -- The submit request, kept only until the turn is queued: the message lives in memory.
  request jsonb,
  -- The client's Idempotency-Key (the turn id is derived from it) and a hash of what it
  -- submitted, so the same key with another body is refused.
  idempotency_key text,
  request_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  queued_at timestamptz
);
CREATE INDEX turn_submissions_unqueued ON orchestrator.turn_submissions (user_id, created_at)
  WHERE queued_at IS NULL;

-- When the turn's user message was stored, and its place in the order memory stored messages
-- (memory.messages.seq): turns of a conversation run in that order. Runs from before this
-- migration count as earliest.
ALTER TABLE orchestrator.runs ADD COLUMN user_message_at timestamptz;
ALTER TABLE orchestrator.runs ADD COLUMN user_message_seq bigint;
UPDATE orchestrator.runs SET user_message_at = created_at, user_message_seq = 0
  WHERE kind = 'turn';
CREATE INDEX runs_unfinished_by_conversation
  ON orchestrator.runs (conversation_id, user_message_seq)
  WHERE kind = 'turn' AND status IN ('queued', 'running');
