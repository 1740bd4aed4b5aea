-- A turn's recall searches the user's facts on their own as well (recall-service.ts). Through
-- the HNSW index they are a few hundred rows among the user's 100,000 messages; this index
-- hands the planner exactly them, to rank by exact distance (0.4 ms against 4 ms).
CREATE INDEX embeddings_facts_by_user ON memory.embeddings (user_id, model)
  WHERE item_kind = 'fact';
