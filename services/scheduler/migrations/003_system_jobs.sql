-- System jobs: schedules of the scheduler's own (the weekly roll-up of memory), with no user.
-- Their user_id is NULL, and so are their runs': every user's request is scoped by
-- user_id = $1, which NULL never equals, so no user lists, reads or changes them.
ALTER TABLE scheduler.schedules ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE scheduler.runs ALTER COLUMN user_id DROP NOT NULL;

ALTER TABLE scheduler.schedules DROP CONSTRAINT schedules_created_by_check;
ALTER TABLE scheduler.schedules ADD CONSTRAINT schedules_created_by_check
  CHECK (created_by IN ('user', 'model', 'system'));
-- {type: system, job} is internal: the API's actions are the other three.
ALTER TABLE scheduler.schedules ADD CONSTRAINT schedules_action_type_check
  CHECK (action->>'type' IN ('remind', 'prompt', 'mission', 'system'));
ALTER TABLE scheduler.schedules ADD CONSTRAINT schedules_system_check
  CHECK ((user_id IS NULL) = (action->>'type' = 'system')
     AND (user_id IS NULL) = (created_by = 'system'));
