-- The built-in sparse embedder's terms now come from Postgres' own text search, the same
-- configuration as the full-text columns (to_tsvector('english', ...): its parser, stop words and
-- Snowball stemmer), instead of a stemmer of memory's own that disagreed with it. This function
-- is the one definition of a term: a text's lexemes in the order they occur. A lexeme said
-- several times is there as often; past the 16,383rd word Postgres stops counting positions, so
-- a very long text's last terms come in lexeme order.
CREATE FUNCTION memory.terms(body text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT ARRAY(
    SELECT t.lexeme FROM unnest(to_tsvector('english', body)) AS t, unnest(t.positions) AS p(at)
    ORDER BY p.at, t.lexeme)
$$;

-- The term statistics count, for each user and term, the items with a sparse embedding whose
-- text has the term: counted again with the new terms, from the same texts the embedder reads
-- (a file's path with its separators as spaces, as its full-text column reads it, and its first
-- 20,000 characters).
DELETE FROM memory.term_stats;
INSERT INTO memory.term_stats (user_id, term, items)
SELECT indexed.user_id, term, count(*)
FROM (
  SELECT e.user_id, m.content AS body FROM memory.embeddings e
  JOIN memory.messages m ON m.id = e.item_id
  WHERE e.model = 'local-sparse-v1' AND e.item_kind = 'message'
  UNION ALL
  SELECT e.user_id, f.content FROM memory.embeddings e
  JOIN memory.facts f ON f.id = e.item_id
  WHERE e.model = 'local-sparse-v1' AND e.item_kind = 'fact'
  UNION ALL
  SELECT e.user_id, s.content FROM memory.embeddings e
  JOIN memory.summaries s ON s.id = e.item_id
  WHERE e.model = 'local-sparse-v1' AND e.item_kind = 'summary'
  UNION ALL
  SELECT e.user_id, c.content FROM memory.embeddings e
  JOIN memory.document_chunks c ON c.id = e.item_id
  WHERE e.model = 'local-sparse-v1' AND e.item_kind = 'document'
  UNION ALL
  SELECT e.user_id, translate(f.path, '/._-', '    ') || E'\n' || left(f.content, 20000)
  FROM memory.embeddings e JOIN memory.files f ON f.id = e.item_id
  WHERE e.model = 'local-sparse-v1' AND e.item_kind = 'file'
) indexed,
unnest(tsvector_to_array(to_tsvector('english', indexed.body))) AS term
GROUP BY indexed.user_id, term;

-- Every stored sparse vector was made from the old terms: memory re-embeds them in the background
-- (services/memory, sparse-reembed.ts), taking rows off this queue in batches. Until a row's turn
-- comes its old vector still matches the query's terms that both stemmers spell alike, and
-- full-text search is unchanged, so searches keep finding it.
CREATE TABLE memory.sparse_reembed_queue (
  item_id uuid NOT NULL,
  item_kind text NOT NULL,
  PRIMARY KEY (item_id, item_kind)
);
INSERT INTO memory.sparse_reembed_queue (item_id, item_kind)
SELECT item_id, item_kind FROM memory.embeddings WHERE model = 'local-sparse-v1';
