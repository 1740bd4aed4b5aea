-- A schedule's occurrence starts its mission with the occurrence's key, and its delivery may be
-- retried (a timeout, a scheduler that crashed before recording it): the same key again answers
-- the mission made first. Missions without a key (NULL) never conflict.
ALTER TABLE orchestrator.missions
  ADD COLUMN idempotency_key text,
  ADD CONSTRAINT missions_idempotency_key UNIQUE (user_id, idempotency_key),
  DROP CONSTRAINT missions_created_by_check,
  ADD CONSTRAINT missions_created_by_check
    CHECK (created_by IN ('user', 'model', 'schedule'));
