-- Documents: only their text is kept, as overlapping chunks; each chunk is a search item of kind
-- 'document' (its embedding in memory.embeddings is keyed by the chunk id).

CREATE TABLE memory.documents (
  id uuid PRIMARY KEY,
  user_id uuid NOT NULL,
  title text NOT NULL,
  content_type text NOT NULL CHECK (content_type IN ('text/plain', 'text/markdown', 'text/html')),
  -- Where it came from: a URL or a file name.
  source text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Characters of text after conversion, which is what the chunks cover.
  size_chars integer NOT NULL CHECK (size_chars >= 0),
  chunk_count integer NOT NULL CHECK (chunk_count >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_by_user ON memory.documents (user_id, created_at DESC);

CREATE TABLE memory.document_chunks (
  id uuid PRIMARY KEY,
  document_id uuid NOT NULL REFERENCES memory.documents (id) ON DELETE CASCADE,
  -- Copied from the document so every query can filter by owner without a join.
  user_id uuid NOT NULL,
  chunk_index integer NOT NULL CHECK (chunk_index >= 0),
  content text NOT NULL,
  token_count integer NOT NULL CHECK (token_count >= 0),
  -- Chunks are a few hundred words, far below the 1 MB a tsvector may hold.
  search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (document_id, chunk_index)
);
CREATE INDEX document_chunks_search ON memory.document_chunks USING gin (search);
CREATE INDEX document_chunks_by_user_time ON memory.document_chunks (user_id, created_at);
