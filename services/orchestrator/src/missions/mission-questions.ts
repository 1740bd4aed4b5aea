import { randomUUID } from 'node:crypto';
import { BusError, publishUserEvent } from '@jarvis/bus';
import { type MissionDetail, memoryAppend } from '@jarvis/contracts';
import { withTransaction } from '@jarvis/db';
import { z } from 'zod';
import {
  answerQuestion,
  expireDueQuestions,
  findPendingQuestion,
  findQuestion,
  findQuestionAnsweredBy,
  insertQuestion,
  listPendingQuestions,
  type StoredQuestion,
  setQuestionMessage,
} from '../repositories/mission-questions-repository';
import {
  findMission,
  listTasks,
  type StoredMission,
  type StoredTask,
  setTaskStatus,
} from '../repositories/missions-repository';
import { markRunWaiting } from '../repositories/runs-repository';
import type { LoopResult } from '../services/agent-loop';
import { cutEventText } from '../services/run-turn';
import { type AgentTool, jsonSchemaOf } from '../tools/agent-tool';
import { getMission, type MissionDeps, queueWork } from './mission-service';

// A task's way to reach its user mid-task: its run pauses on the call, the question is posted in
// the mission's conversation and on the user's event stream (so on their channels), and the
// task goes on once the user answers (POST /v1/missions/{id}/answer, or their next message in
// that conversation) or the question expires.

const ASK_USER = 'ask_user';
const QUESTION_MAX_CHARS = 2_000;
// Characters of the objective (or task title) the conversation names a mission (or task) by.
const SHOWN_CHARS = 120;

const Args = z.strictObject({ question: z.string().trim().min(1).max(QUESTION_MAX_CHARS) });

export function createAskUserTool(): AgentTool {
  return {
    definition: {
      name: ASK_USER,
      description:
        'Ask your user one clear question that the task needs and that only they can answer (a preference, a choice between options, a detail you cannot find). The task pauses until they answer; the result is {answer}, or {answer: null, expired: true} when they did not answer in time: then go on as best you can. Do not ask what your tools can find out.',
      parameters: jsonSchemaOf(Args),
    },
    risk: 'safe',
    pausesForAnswer: true,
    // The loop pauses on every call of this tool and gives the user's answer as its result.
    async run() {
      throw new Error('ask_user is answered by its user, never run');
    },
  };
}

type Paused = NonNullable<LoopResult['paused']>;

// The task's run paused on ask_user: the question is stored with the loop to go on with, and
// the task and its run wait, all at once; then the user is told.
export async function askUser(
  deps: MissionDeps,
  mission: StoredMission,
  task: StoredTask,
  runId: string,
  result: LoopResult,
  paused: Paused,
): Promise<void> {
  const question = await withTransaction(deps.pool, async (db) => {
    const stored = await insertQuestion(db, {
      id: randomUUID(),
      missionId: mission.id,
      taskId: task.id,
      runId,
      userId: task.userId,
      conversationId: mission.conversationId,
      toolCallId: paused.call.id,
      text: questionOf(paused.call.arguments),
      loopState: paused.state,
      ttlMs: deps.questionTtlMs,
    });
    await setTaskStatus(db, task.id, 'waiting');
    await markRunWaiting(db, runId, {
      replyMessageId: null,
      provider: result.provider,
      model: result.model,
      usage: result.usage,
    });
    return stored;
  });
  await tellQuestion(deps, mission, question);
}

// The model's question as it asked it; arguments of another shape are shown as they are, since
// the pause comes before any tool would check them.
function questionOf(args: Record<string, unknown>): string {
  const parsed = Args.safeParse(args);
  return parsed.success ? parsed.data.question : JSON.stringify(args).slice(0, QUESTION_MAX_CHARS);
}

// Posts the question in the mission's conversation and publishes it to the user's events. Both
// are keyed by the question, so telling it again (a redelivered task that finds it waiting)
// posts and notifies once. The post names the task that asks, and says when an earlier question
// of the conversation waits: a chat message answers the one waiting longest.
export async function tellQuestion(
  deps: MissionDeps,
  mission: StoredMission,
  question: StoredQuestion,
): Promise<void> {
  const [tasks, waiting] = await Promise.all([
    listTasks(deps.pool, mission.userId, mission.id),
    listPendingQuestions(deps.pool, {
      userId: mission.userId,
      conversationId: mission.conversationId,
    }),
  ]);
  const task = tasks.find((candidate) => candidate.id === question.taskId);
  const asker = task
    ? `Task ${task.number} “${shorten(task.title)}” of the mission`
    : 'The mission';
  const isEarlierWaiting = waiting.some(
    (other) => other.id !== question.id && other.createdAt <= question.createdAt,
  );
  const howToAnswer = isEarlierWaiting
    ? 'An earlier question waits: your next message here answers that one first (or answer this one on the mission’s page).'
    : 'Your next message here is taken as the answer.';
  const { message } = await deps.bus.request(memoryAppend, {
    userId: mission.userId,
    conversationId: mission.conversationId,
    role: 'assistant',
    content: `${asker} “${shorten(mission.objective)}” asks:\n${question.text}\n\n${howToAnswer}`,
    idempotencyKey: `mission-question:${question.id}`,
    metadata: { missionId: mission.id, questionId: question.id },
  });
  if (question.messageId === null) await setQuestionMessage(deps.pool, question.id, message.id);
  await publishUserEvent(deps.bus, mission.userId, `mission-question:${question.id}`, {
    type: 'mission_question',
    occurredAt: question.createdAt.toISOString(),
    mission: {
      id: mission.id,
      objective: mission.objective,
      status: mission.status,
      conversationId: mission.conversationId,
    },
    question: {
      id: question.id,
      taskId: question.taskId,
      text: cutEventText(question.text),
      messageId: message.id,
      expiresAt: question.expiresAt.toISOString(),
    },
  });
}

// POST /v1/missions/{id}/answer: answers the question named, or the mission's question longest
// waiting.
export async function answerMission(
  deps: MissionDeps,
  request: { userId: string; id: string; text: string; questionId?: string },
): Promise<MissionDetail> {
  const { userId, id: missionId, text, questionId } = request;
  const mission = await findMission(deps.pool, userId, missionId);
  if (!mission) throw new BusError('not_found', 'mission not found');
  const scope = { userId, missionId };
  const question =
    questionId === undefined
      ? await findPendingQuestion(deps.pool, scope)
      : await findQuestion(deps.pool, scope, questionId);
  if (questionId !== undefined && !question) {
    throw new BusError('not_found', 'the mission has no such question');
  }
  const answered =
    question?.status === 'pending' && (await answerQuestion(deps.pool, question.id, text));
  if (!answered) {
    throw new BusError(
      'conflict',
      questionId === undefined
        ? 'the mission has no question waiting for an answer'
        : 'the question no longer waits for an answer (answered, expired or cancelled)',
    );
  }
  await goOn(deps, answered);
  return getMission(deps.pool, userId, missionId);
}

// A chat message in a conversation where a mission's question waits is its answer: the
// conversation's oldest question takes it, and the turn replies with this note instead of a
// model's answer. Undefined when no question waits there (the turn goes on as usual).
// Once per turn: a turn run again finds the question its message answered, and neither answers
// another with it nor answers twice; its task is queued again, which is harmless if it was.
export async function answerPendingQuestion(
  deps: MissionDeps,
  run: { userId: string; conversationId: string; turnId: string },
  text: string,
): Promise<string | undefined> {
  const answered =
    (await findQuestionAnsweredBy(deps.pool, run.userId, run.turnId)) ??
    (await answerOldestQuestion(deps, run, text));
  if (!answered) return undefined;
  await goOn(deps, answered);
  const [mission, tasks] = await Promise.all([
    findMission(deps.pool, run.userId, answered.missionId),
    listTasks(deps.pool, run.userId, answered.missionId),
  ]);
  const task = tasks.find((candidate) => candidate.id === answered.taskId);
  const objective = shorten(mission?.objective ?? 'the mission');
  return task
    ? `I passed your answer on to task ${task.number} “${shorten(task.title)}” of the mission “${objective}”.`
    : `I passed your answer on to the mission “${objective}”.`;
}

async function answerOldestQuestion(
  deps: MissionDeps,
  run: { userId: string; conversationId: string; turnId: string },
  text: string,
): Promise<StoredQuestion | undefined> {
  const oldest = await findPendingQuestion(deps.pool, {
    userId: run.userId,
    conversationId: run.conversationId,
  });
  return oldest && answerQuestion(deps.pool, oldest.id, text, run.turnId);
}

function shorten(text: string): string {
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS - 1)}…`;
}

// The task was queued again with its question closed (repository): its work goes out under a
// key of its own. Lost in a crash, the mission's resume on start queues it again.
async function goOn(deps: MissionDeps, question: StoredQuestion): Promise<void> {
  await queueWork(
    deps.bus,
    {
      step: 'task',
      userId: question.userId,
      missionId: question.missionId,
      taskId: question.taskId,
    },
    `question:${question.id}`,
  );
}

// Questions nobody answered in time expire, and their tasks go on without an answer.
export function startQuestionSweeper(deps: MissionDeps, intervalMs: number): { stop(): void } {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      for (const question of await expireDueQuestions(deps.pool)) await goOn(deps, question);
    } catch (error) {
      deps.logger.warn({ err: error }, 'mission question sweep failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
