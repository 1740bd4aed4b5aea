import type { MissionQuestion } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';

// The questions mission tasks ask their users (ask_user). Reads a user's request reaches are
// scoped by user_id; the workers and the sweeper address rows by id, as missions-repository does.

type QuestionStatus = 'pending' | 'answered' | 'expired' | 'cancelled';

type QuestionRow = {
  id: string;
  mission_id: string;
  task_id: string;
  run_id: string;
  user_id: string;
  conversation_id: string;
  tool_call_id: string;
  question: string;
  loop_state: unknown;
  status: QuestionStatus;
  answer: string | null;
  message_id: string | null;
  answered_by_turn: string | null;
  expires_at: Date;
  created_at: Date;
};

export type StoredQuestion = {
  id: string;
  missionId: string;
  taskId: string;
  runId: string;
  userId: string;
  conversationId: string;
  toolCallId: string;
  text: string;
  // The agent loop's state, checked by LoopStateSchema when the task goes on.
  loopState: unknown;
  status: QuestionStatus;
  answer: string | null;
  messageId: string | null;
  // The chat turn whose message answered it; null when answered through the API.
  answeredByTurn: string | null;
  expiresAt: Date;
  createdAt: Date;
};

function toQuestion(row: QuestionRow): StoredQuestion {
  return {
    id: row.id,
    missionId: row.mission_id,
    taskId: row.task_id,
    runId: row.run_id,
    userId: row.user_id,
    conversationId: row.conversation_id,
    toolCallId: row.tool_call_id,
    text: row.question,
    loopState: row.loop_state,
    status: row.status,
    answer: row.answer,
    messageId: row.message_id,
    answeredByTurn: row.answered_by_turn,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
  };
}

export function publicQuestion(question: StoredQuestion): MissionQuestion {
  return {
    id: question.id,
    taskId: question.taskId,
    text: question.text,
    askedAt: question.createdAt.toISOString(),
    expiresAt: question.expiresAt.toISOString(),
  };
}

type NewQuestion = Omit<
  StoredQuestion,
  'status' | 'answer' | 'messageId' | 'answeredByTurn' | 'expiresAt' | 'createdAt'
> & { ttlMs: number };

export async function insertQuestion(
  db: Queryable,
  question: NewQuestion,
): Promise<StoredQuestion> {
  const { rows } = await db.query<QuestionRow>(
    `INSERT INTO orchestrator.mission_questions
       (id, mission_id, task_id, run_id, user_id, conversation_id, tool_call_id, question,
        loop_state, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
             now() + make_interval(secs => $10::double precision / 1000))
     RETURNING *`,
    [
      question.id,
      question.missionId,
      question.taskId,
      question.runId,
      question.userId,
      question.conversationId,
      question.toolCallId,
      question.text,
      JSON.stringify(question.loopState),
      question.ttlMs,
    ],
  );
  const row = rows[0];
  if (!row) throw new Error(`question of task ${question.taskId} was not stored`);
  return toQuestion(row);
}

export async function setQuestionMessage(
  db: Queryable,
  id: string,
  messageId: string,
): Promise<void> {
  await db.query('UPDATE orchestrator.mission_questions SET message_id = $2 WHERE id = $1', [
    id,
    messageId,
  ]);
}

// The task's latest question: the one its run goes on from once it is no longer pending.
export async function findLatestQuestion(
  db: Queryable,
  taskId: string,
): Promise<StoredQuestion | undefined> {
  const { rows } = await db.query<QuestionRow>(
    `SELECT * FROM orchestrator.mission_questions
     WHERE task_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1`,
    [taskId],
  );
  return rows[0] ? toQuestion(rows[0]) : undefined;
}

type PendingScope = { userId: string } & ({ missionId: string } | { conversationId: string });

// The pending questions of a mission (or, without one, of a conversation), longest waiting
// first.
export async function listPendingQuestions(
  db: Queryable,
  scope: PendingScope,
  limit = 100,
): Promise<StoredQuestion[]> {
  const [column, value] =
    'missionId' in scope
      ? ['mission_id', scope.missionId]
      : ['conversation_id', scope.conversationId];
  const { rows } = await db.query<QuestionRow>(
    `SELECT * FROM orchestrator.mission_questions
     WHERE user_id = $1 AND ${column} = $2 AND status = 'pending'
     ORDER BY created_at, id LIMIT $3`,
    [scope.userId, value, limit],
  );
  return rows.map(toQuestion);
}

// The pending question a mission (or a conversation) has waited on longest.
export async function findPendingQuestion(
  db: Queryable,
  scope: PendingScope,
): Promise<StoredQuestion | undefined> {
  const [oldest] = await listPendingQuestions(db, scope, 1);
  return oldest;
}

// One question of the user's mission, in whatever status.
export async function findQuestion(
  db: Queryable,
  scope: { userId: string; missionId: string },
  id: string,
): Promise<StoredQuestion | undefined> {
  const { rows } = await db.query<QuestionRow>(
    `SELECT * FROM orchestrator.mission_questions
     WHERE id = $1 AND user_id = $2 AND mission_id = $3`,
    [id, scope.userId, scope.missionId],
  );
  return rows[0] ? toQuestion(rows[0]) : undefined;
}

// The question the user's chat turn answered, if it did.
export async function findQuestionAnsweredBy(
  db: Queryable,
  userId: string,
  turnId: string,
): Promise<StoredQuestion | undefined> {
  const { rows } = await db.query<QuestionRow>(
    `SELECT * FROM orchestrator.mission_questions
     WHERE answered_by_turn = $1 AND user_id = $2`,
    [turnId, userId],
  );
  return rows[0] ? toQuestion(rows[0]) : undefined;
}

// Answers a pending question and queues its task again, together: a task is never left waiting
// on an answered question, nor queued on a pending one. Undefined when it was no longer pending
// (answered, expired or cancelled meanwhile). `turnId`: the chat turn whose message this is.
export async function answerQuestion(
  db: Queryable,
  id: string,
  answer: string,
  turnId: string | null = null,
): Promise<StoredQuestion | undefined> {
  const { rows } = await db.query<QuestionRow>(
    `WITH answered AS (
       UPDATE orchestrator.mission_questions
       SET status = 'answered', answer = $2, answered_by_turn = $3, closed_at = now()
       WHERE id = $1 AND status = 'pending'
       RETURNING *
     ), requeued AS (
       UPDATE orchestrator.mission_tasks t SET status = 'queued'
       FROM answered WHERE t.id = answered.task_id AND t.status = 'waiting'
     )
     SELECT * FROM answered`,
    [id, answer, turnId],
  );
  return rows[0] ? toQuestion(rows[0]) : undefined;
}

// Pending questions past their time expire, and their tasks are queued again to go on without
// an answer.
export async function expireDueQuestions(db: Queryable): Promise<StoredQuestion[]> {
  const { rows } = await db.query<QuestionRow>(
    `WITH expired AS (
       UPDATE orchestrator.mission_questions
       SET status = 'expired', closed_at = now()
       WHERE status = 'pending' AND expires_at <= now()
       RETURNING *
     ), requeued AS (
       UPDATE orchestrator.mission_tasks t SET status = 'queued'
       FROM expired WHERE t.id = expired.task_id AND t.status = 'waiting'
     )
     SELECT * FROM expired`,
  );
  return rows.map(toQuestion);
}

// A cancelled mission's questions are no longer asked.
export async function cancelQuestions(db: Queryable, missionId: string): Promise<void> {
  await db.query(
    `UPDATE orchestrator.mission_questions SET status = 'cancelled', closed_at = now()
     WHERE mission_id = $1 AND status = 'pending'`,
    [missionId],
  );
}
