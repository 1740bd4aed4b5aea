-- Rolling summaries: the oldest part of a conversation's unsummarised tail, condensed by the
-- utility model. The messages they cover are never deleted and stay searchable.
CREATE TABLE memory.summaries (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  conversation_id uuid NOT NULL REFERENCES memory.conversations (id) ON DELETE CASCADE,
  -- The covered messages: seq from_seq..to_seq, inclusive.
  from_seq bigint NOT NULL,
  to_seq bigint NOT NULL,
  from_at timestamptz NOT NULL,
  to_at timestamptz NOT NULL,
  content text NOT NULL,
  search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (conversation_id, from_seq)
);
CREATE INDEX summaries_by_conversation ON memory.summaries (conversation_id, to_seq DESC);
CREATE INDEX summaries_search ON memory.summaries USING gin (search);
