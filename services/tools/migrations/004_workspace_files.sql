-- Workspaces: the files each conversation and each mission keeps, which run_code sees at
-- /workspace and the user lists, downloads, uploads and deletes. Kept in the database rather than
-- on a volume so that a backup of the tools schema has them, and so that the gateway never shares
-- a disk with the tools service.

CREATE TABLE tools.workspace_files (
  user_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('conversation', 'mission')),
  -- The conversation's or the mission's id.
  owner_id uuid NOT NULL,
  -- Relative, '/'-separated (contracts' isWorkspacePath); a folder is only ever a prefix.
  path text NOT NULL,
  content bytea NOT NULL,
  -- octet_length(content), kept beside it so that listings and quota sums never read the bytes.
  size integer NOT NULL CHECK (size >= 0),
  media_type text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, kind, owner_id, path)
);
-- The quota check sums one user's sizes on every write: an index-only scan with this.
CREATE INDEX workspace_files_usage ON tools.workspace_files (user_id) INCLUDE (size);
