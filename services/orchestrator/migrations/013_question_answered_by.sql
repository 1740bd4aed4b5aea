-- The chat turn whose message answered a question (NULL: answered through the API, expired or
-- cancelled). A turn run again (redelivered after a crash, or submitted again under the same
-- idempotency key) finds the question it already answered instead of answering the next one
-- with the same message; the unique index keeps one turn from answering two.
ALTER TABLE orchestrator.mission_questions ADD COLUMN answered_by_turn uuid;
CREATE UNIQUE INDEX mission_questions_answered_by_turn ON orchestrator.mission_questions
  (answered_by_turn) WHERE answered_by_turn IS NOT NULL;
