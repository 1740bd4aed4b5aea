-- The trace the mission was started in (the request or turn that created it): each task runs in
-- a trace of its own, one per task as a turn has one, linked back to this span. NULL: a mission
-- started before traces were kept here, whose tasks then go unlinked.
ALTER TABLE orchestrator.missions
  ADD COLUMN trace_id text,
  ADD COLUMN span_id text;
