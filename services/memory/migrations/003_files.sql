-- Memory files: a per-user virtual filesystem. The row holds the current version; every version
-- it replaces (by a write, an edit, a restore or the delete) is copied to file_versions first.

CREATE TABLE memory.files (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  path text NOT NULL,
  content text NOT NULL,
  tags text[] NOT NULL DEFAULT '{}',
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- A deleted file stays behind with its history; its path is free for a new file.
  deleted_at timestamptz,
  -- Path words weigh more than content words. Only the first 200,000 characters of the content
  -- are indexed: a tsvector holds at most 1 MB, which a 1,000,000-character file of distinct
  -- words exceeds, and its write would fail.
  search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', translate(path, '/._-', '    ')), 'A')
    || setweight(to_tsvector('english', left(content, 200000)), 'B')
  ) STORED
);
CREATE UNIQUE INDEX files_live_path ON memory.files (user_id, path) WHERE deleted_at IS NULL;
CREATE INDEX files_search ON memory.files USING gin (search);

CREATE TABLE memory.file_versions (
  file_id uuid NOT NULL REFERENCES memory.files (id) ON DELETE CASCADE,
  version integer NOT NULL,
  content text NOT NULL,
  tags text[] NOT NULL,
  metadata jsonb NOT NULL,
  -- When this version was written, not when it was replaced.
  created_at timestamptz NOT NULL,
  PRIMARY KEY (file_id, version)
);
