-- Messages stored by a turn wait here to be made searchable (embedding, term statistics) off the
-- turn's path; a row leaves in the transaction that indexes its message, so a crash leaves it
-- for the next drain. Imports still index in their own transaction.
CREATE TABLE memory.message_index_queue (
  message_id uuid PRIMARY KEY REFERENCES memory.messages (id) ON DELETE CASCADE,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL,
  queued_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_index_queue_by_user ON memory.message_index_queue (user_id);
CREATE INDEX message_index_queue_by_conversation
  ON memory.message_index_queue (conversation_id, queued_at);
