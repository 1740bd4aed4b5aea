-- The schedule whose occurrence submitted the turn (a prompt action): when the turn ends, its
-- result or failure is told to the user's channels as a schedule_result event. NULL: a turn the
-- user typed, or a mission task's run.
ALTER TABLE orchestrator.runs ADD COLUMN schedule_id uuid;
