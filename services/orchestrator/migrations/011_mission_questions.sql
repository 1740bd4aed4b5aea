-- Missions that know their user: the user's time zone, in which the tasks are told the date
-- (NULL: a mission started before it was kept, told in UTC), and the questions a task asks its
-- user (ask_user), which it waits on in the new task status `waiting`.
ALTER TABLE orchestrator.missions ADD COLUMN time_zone text;

ALTER TABLE orchestrator.mission_tasks
  DROP CONSTRAINT mission_tasks_status_check,
  ADD CONSTRAINT mission_tasks_status_check CHECK (
    status IN ('pending', 'queued', 'running', 'waiting', 'completed', 'failed', 'skipped')
  );

-- One question a task's run paused on, with the loop it goes on with once answered (as an
-- approval keeps it). answered: `answer` holds the user's text; expired: nobody answered by
-- expires_at, and the task went on without it; cancelled: the mission was cancelled first.
CREATE TABLE orchestrator.mission_questions (
  id uuid PRIMARY KEY,
  mission_id uuid NOT NULL REFERENCES orchestrator.missions (id) ON DELETE CASCADE,
  task_id uuid NOT NULL REFERENCES orchestrator.mission_tasks (id) ON DELETE CASCADE,
  run_id uuid NOT NULL,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL,
  tool_call_id text NOT NULL,
  question text NOT NULL,
  loop_state jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'answered', 'expired', 'cancelled')),
  answer text,
  -- The question as posted in the conversation, once it is.
  message_id uuid,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz
);
-- A chat message in the conversation answers its oldest pending question.
CREATE INDEX mission_questions_pending ON orchestrator.mission_questions
  (user_id, conversation_id, created_at) WHERE status = 'pending';
CREATE INDEX mission_questions_due ON orchestrator.mission_questions (expires_at)
  WHERE status = 'pending';
CREATE INDEX mission_questions_by_task ON orchestrator.mission_questions (task_id, created_at);
