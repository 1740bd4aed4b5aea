-- Standing instructions: a text the user writes once, in every prompt. With the user's standing
-- rules (facts of category 'rule') it is capped in tokens when it is written, not here: the
-- cap is counted in the service, as the prompt is.
CREATE TABLE memory.instructions (
  user_id uuid PRIMARY KEY,
  text text NOT NULL CHECK (char_length(text) <= 8000),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A standing rule ("always answer in metric") is a fact of its own category, listed in every
-- prompt beside the instructions.
ALTER TABLE memory.facts DROP CONSTRAINT facts_category_check;
ALTER TABLE memory.facts ADD CONSTRAINT facts_category_check
  CHECK (category IN ('fact', 'preference', 'decision', 'insight', 'reminder', 'profile', 'rule'));
