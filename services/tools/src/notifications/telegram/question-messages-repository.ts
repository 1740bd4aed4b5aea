import type { Queryable } from '@jarvis/db';

// tools.telegram_question_messages: which sent message carried which mission question, so that
// a reply to it answers that question.

export type QuestionMessage = { userId: string; missionId: string; questionId: string };

// Keeps the messages of one question; rows past a month go at the same time, so the table holds
// only messages a reply may still answer. A send tried again keeps what the first try kept.
export async function saveQuestionMessages(
  db: Queryable,
  chatId: string,
  messageIds: readonly number[],
  question: QuestionMessage,
): Promise<void> {
  await db.query(
    `DELETE FROM tools.telegram_question_messages WHERE created_at < now() - interval '30 days'`,
  );
  await db.query(
    `INSERT INTO tools.telegram_question_messages
       (chat_id, message_id, user_id, mission_id, question_id)
     SELECT $1, unnest($2::bigint[]), $3, $4, $5
     ON CONFLICT (chat_id, message_id) DO NOTHING`,
    [chatId, messageIds, question.userId, question.missionId, question.questionId],
  );
}

// The question a message of the user's chat carried; undefined for any other message.
export async function findQuestionMessage(
  db: Queryable,
  userId: string,
  chatId: string,
  messageId: number,
): Promise<QuestionMessage | undefined> {
  const { rows } = await db.query<{ mission_id: string; question_id: string }>(
    `SELECT mission_id, question_id FROM tools.telegram_question_messages
     WHERE chat_id = $1 AND message_id = $2 AND user_id = $3`,
    [chatId, messageId, userId],
  );
  const row = rows[0];
  return row ? { userId, missionId: row.mission_id, questionId: row.question_id } : undefined;
}
