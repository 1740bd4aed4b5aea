-- A history import sent with an Idempotency-Key: the SHA-256 of the request it was first sent
-- with. The key alone names its messages by position, so the same key with other messages
-- stored the extra ones; a request whose hash differs is now refused and stores nothing.
CREATE TABLE memory.import_batches (
  user_id uuid NOT NULL,
  batch_key text NOT NULL,
  request_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, batch_key)
);
