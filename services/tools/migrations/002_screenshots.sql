-- Screenshots browser_screenshot took: the PNG itself, kept in the database so that a backup of
-- the tools schema has them and a user's own run view and chat can show them. Kept for
-- SCREENSHOT_RETENTION_DAYS, then pruned by the tools service.

CREATE TABLE tools.screenshots (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  -- The run and conversation the tool call belonged to; null when called outside one.
  run_id uuid,
  conversation_id uuid,
  -- The page's address when it was taken (after redirects).
  url text NOT NULL,
  png bytea NOT NULL,
  width integer NOT NULL CHECK (width > 0),
  height integer NOT NULL CHECK (height > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
-- The pruner's look for screenshots past their retention.
CREATE INDEX screenshots_created ON tools.screenshots (created_at);
