-- The skills a task may load (skill_load) and sees in its prompt's index, by name; empty: none.
-- Names, not file ids: a skill the user rewrote between planning and the run is loaded as it is
-- then, and one they deleted is simply not found.
ALTER TABLE orchestrator.mission_tasks ADD COLUMN skills text[] NOT NULL DEFAULT '{}';
