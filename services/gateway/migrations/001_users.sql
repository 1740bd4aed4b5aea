CREATE TABLE gateway.users (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Keys are stored as SHA-256 hashes: they are long random strings, so a slow hash adds nothing.
-- The prefix is shown to tell keys apart without revealing them.
CREATE TABLE gateway.api_keys (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES gateway.users (id) ON DELETE CASCADE,
  prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  scope text NOT NULL CHECK (scope IN ('user', 'admin')),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_by_user ON gateway.api_keys (user_id);
