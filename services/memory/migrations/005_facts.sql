-- Facts: semantic memory, short statements about the user and their world. A fact is never
-- changed or erased: a change inserts a successor row and closes the old one (valid_to, and
-- superseded_by pointing to the successor); forgetting only closes it. Open rows
-- (valid_to IS NULL) are the user's current facts.

CREATE TABLE memory.facts (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  category text NOT NULL DEFAULT 'fact'
    CHECK (category IN ('fact', 'preference', 'decision', 'insight', 'reminder', 'profile')),
  content text NOT NULL CHECK (char_length(content) BETWEEN 1 AND 2000),
  tags text[] NOT NULL DEFAULT '{}',
  importance integer NOT NULL DEFAULT 5 CHECK (importance BETWEEN 1 AND 10),
  -- Provenance: the messages the fact was learnt from.
  source_message_ids uuid[] NOT NULL DEFAULT '{}',
  valid_from timestamptz NOT NULL DEFAULT now(),
  valid_to timestamptz,
  superseded_by uuid REFERENCES memory.facts (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- Set when search returns the fact, so unused facts can later be told apart.
  last_accessed_at timestamptz,
  search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  CHECK (superseded_by IS NULL OR valid_to IS NOT NULL)
);
CREATE INDEX facts_search ON memory.facts USING gin (search);
CREATE INDEX facts_by_user_validity ON memory.facts (user_id, valid_to, created_at);
-- One successor per version; also walks a fact's history backwards.
CREATE UNIQUE INDEX facts_one_successor ON memory.facts (superseded_by)
  WHERE superseded_by IS NOT NULL;
