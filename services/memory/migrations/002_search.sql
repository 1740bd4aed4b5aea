-- Hybrid search: full-text over each kind's own text, and vector similarity over embeddings.

ALTER TABLE memory.messages ADD COLUMN author text;
ALTER TABLE memory.messages
  ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED;
CREATE INDEX messages_search ON memory.messages USING gin (search);
CREATE INDEX messages_by_user_time ON memory.messages (user_id, created_at);

-- Embeddings sit beside the items they describe, keyed by item and model: a new model means a
-- background re-embed into new rows, not a migration. The item's owner, conversation and date
-- are copied here so one query can filter and rank across every kind.
CREATE TABLE memory.embeddings (
  item_kind text NOT NULL CHECK (item_kind IN ('message', 'fact', 'summary', 'file', 'document')),
  item_id uuid NOT NULL,
  model text NOT NULL,
  user_id uuid NOT NULL,
  conversation_id uuid,
  item_created_at timestamptz NOT NULL,
  -- The built-in embedder's vectors are sparse; a model's are dense. Exactly one is set.
  sparse sparsevec,
  dense vector,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- item_id first: search scores a list of items by id.
  PRIMARY KEY (item_id, item_kind, model),
  CHECK ((sparse IS NULL) <> (dense IS NULL))
);
CREATE INDEX embeddings_by_user ON memory.embeddings (user_id, model, item_created_at);
CREATE INDEX embeddings_local_hnsw ON memory.embeddings
  USING hnsw ((sparse::sparsevec(1048576)) sparsevec_cosine_ops) WITH (m = 16, ef_construction = 40)
  WHERE model = 'local-sparse-v1';

-- How many of a user's items contain each term, for inverse document frequency at query time.
CREATE TABLE memory.term_stats (
  user_id uuid NOT NULL,
  term text NOT NULL,
  items integer NOT NULL,
  PRIMARY KEY (user_id, term)
);
CREATE TABLE memory.item_counts (
  user_id uuid PRIMARY KEY,
  items bigint NOT NULL
);
