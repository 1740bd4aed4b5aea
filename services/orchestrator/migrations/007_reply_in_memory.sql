-- A turn's reply is a message memory keeps (memory.messages, by the run's reply_message_id), and a
-- mission task's answer is its task's result: the run no longer keeps a copy of either. A copy
-- outlived the message when the user forgot it.
ALTER TABLE orchestrator.runs DROP COLUMN reply_content;
