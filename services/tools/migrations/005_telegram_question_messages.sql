-- The Telegram messages that carried a mission's question, by chat and message id: the user's
-- reply to one of them answers that very question (not the oldest waiting, as a chat message
-- does). Kept a month, longer than any question waits for its answer.
CREATE TABLE tools.telegram_question_messages (
  chat_id text NOT NULL,
  message_id bigint NOT NULL,
  user_id uuid NOT NULL,
  mission_id uuid NOT NULL,
  question_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (chat_id, message_id)
);
CREATE INDEX telegram_question_messages_created ON tools.telegram_question_messages (created_at);
