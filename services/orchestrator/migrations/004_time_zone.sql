-- The user's time zone at the time of the turn, so the prompt gives the date and time where the
-- user is (null: UTC).
ALTER TABLE orchestrator.runs ADD COLUMN time_zone text;
