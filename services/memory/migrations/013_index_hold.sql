-- A message is embedded with the messages before and after it as context. The background drain
-- holds a conversation's newest message until the next one comes (or the hold runs out), so
-- each is embedded once, whole. One embedded before it had a successor (a search that needed
-- it at once, a hold that ran out, an import's last message) is marked here, and is embedded
-- again when its successor comes.
ALTER TABLE memory.messages ADD COLUMN embedded_without_next boolean NOT NULL DEFAULT false;
-- Before this, every conversation's newest message was embedded without a successor.
UPDATE memory.messages m SET embedded_without_next = true
WHERE m.forgotten_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM memory.message_index_queue q WHERE q.message_id = m.id)
  AND NOT EXISTS (
    SELECT 1 FROM memory.messages later
    WHERE later.conversation_id = m.conversation_id AND later.seq > m.seq
      AND later.forgotten_at IS NULL);
