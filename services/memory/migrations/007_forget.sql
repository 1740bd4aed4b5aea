-- Forgetting a message keeps its row (what was said, and when, stays on record) but takes it out
-- of recall, search and export; its embeddings are deleted when it is forgotten.
ALTER TABLE memory.messages ADD COLUMN forgotten_at timestamptz;

-- An export pages through a user's messages in stored order.
CREATE INDEX messages_by_user_seq ON memory.messages (user_id, seq);
