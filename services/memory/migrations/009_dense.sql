-- Dense vectors from the embed model (through model-gateway) are filled in the background, item
-- by item in the order the built-in embedder indexed them: this index is that queue's cursor.
-- Each dense model gets its own HNSW index, created by the service when the model first answers
-- (its size is known only then).
CREATE INDEX embeddings_by_model_time ON memory.embeddings (model, created_at, item_id);
