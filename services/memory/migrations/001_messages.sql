-- The embedded Postgres creates it at start; a real server needs it once per database.
CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

CREATE TABLE memory.conversations (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  -- The user's single persistent conversation, used when a message names none.
  is_default boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX conversations_one_default_per_user
  ON memory.conversations (user_id) WHERE is_default;
CREATE INDEX conversations_by_user ON memory.conversations (user_id, created_at);

CREATE TABLE memory.messages (
  id uuid PRIMARY KEY,
  -- Strict order within a conversation, even for messages stored in the same microsecond.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL REFERENCES memory.conversations (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  content text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  idempotency_key text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX messages_idempotency
  ON memory.messages (conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX messages_by_conversation ON memory.messages (conversation_id, seq DESC);
