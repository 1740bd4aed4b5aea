import { randomUUID } from 'node:crypto';
import { type Bus, BusError, publishUserEvent, publishWork } from '@jarvis/bus';
import {
  type MissionDetail,
  type MissionsCreateRequest,
  type MissionTaskPlan,
  type MissionWork,
  memoryAppend,
  memorySkillsList,
  missionWork,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { activeSpanContext, type Logger } from '@jarvis/telemetry';
import { v5 as uuidv5 } from 'uuid';
import type { z } from 'zod';
import {
  cancelQuestions,
  listPendingQuestions,
  publicQuestion,
} from '../repositories/mission-questions-repository';
import {
  chargeMission,
  findMission,
  findMissionByKey,
  insertMission,
  insertTasks,
  listTasks,
  lockMission,
  type StoredMission,
  type StoredTask,
  setMissionStatus,
  setTaskStatus,
} from '../repositories/missions-repository';
import type { LoopBudget, LoopSettings } from '../services/agent-loop';
import type { AgentMetrics } from '../services/agent-metrics';
import { cutEventText } from '../services/run-turn';
import type { AgentTool } from '../tools/agent-tool';
import { limitSkillLoad, SKILL_LOAD } from '../tools/memory-tools';

export type MissionDeps = {
  bus: Bus;
  pool: Pool;
  logger: Logger;
  // The tools a task may be given: those that need no approval (nobody is there to approve).
  // Read at each use, so tools registered later are offered too.
  tools: readonly AgentTool[];
  // The tool loop of a task: like a turn's, with a task's own step count and deadline.
  loop: LoopSettings;
  defaults: { maxTokens: number; maxCostUsd: number };
  maxDeliver: number;
  // How long a running task stays its worker's without a sign of life (the queue's ack wait).
  leaseMs: number;
  // How long a task's question waits for its user (MISSION_QUESTION_TTL_MS); then the task goes
  // on without an answer.
  questionTtlMs: number;
  // Counts and times each task's run as a turn of kind mission_task; none in tests that do not
  // look at them.
  metrics?: AgentMetrics;
};

export type CreateMission = z.output<typeof MissionsCreateRequest>;

// The namespace of mission ids derived from a user and an idempotency key (uuid v5).
const KEYED_MISSION_NAMESPACE = '6f1c2b9e-4d3a-5e8f-9b17-2a6c8d4e0f53';

// The tools a mission's tasks may be given: those that need no approval.
export function missionTools(deps: MissionDeps): AgentTool[] {
  return deps.tools.filter((tool) => tool.risk === 'safe');
}

// The tools a task may use: the ones it names, else every one of missionTools. Its skill_load
// loads only the skills it names, and comes with them whatever tools it names.
export function taskTools(
  deps: MissionDeps,
  task: { tools: readonly string[] | null; skills: readonly string[] },
): AgentTool[] {
  const { tools: names, skills } = task;
  const isNamed = (name: string) =>
    names === null || names.includes(name) || (name === SKILL_LOAD && skills.length > 0);
  return missionTools(deps)
    .filter((tool) => isNamed(tool.definition.name))
    .map((tool) => (tool.definition.name === SKILL_LOAD ? limitSkillLoad(tool, skills) : tool));
}

function checkToolNames(deps: MissionDeps, tasks: readonly MissionTaskPlan[]): void {
  const available = new Set(missionTools(deps).map((tool) => tool.definition.name));
  const unknown = [...new Set(tasks.flatMap((task) => task.tools ?? []))].filter(
    (name) => !available.has(name),
  );
  if (unknown.length > 0) {
    throw new BusError(
      'bad_request',
      `a mission's tasks cannot use ${unknown.join(', ')}; they may use ${[...available].sort().join(', ')}`,
    );
  }
}

// A plan the user (or the model, through start_mission) gives names skills that must exist: a
// misspelt one would otherwise leave its task without the procedure it was meant to follow.
async function checkSkillNames(
  deps: MissionDeps,
  userId: string,
  tasks: readonly MissionTaskPlan[],
): Promise<void> {
  const named = [...new Set(tasks.flatMap((task) => task.skills ?? []))];
  if (named.length === 0) return;
  const { skills } = await deps.bus.request(memorySkillsList, { userId });
  const known = new Set(skills.map((skill) => skill.name));
  const unknown = named.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    const yours = skills.length > 0 ? `your skills are ${[...known].join(', ')}` : 'you have none';
    throw new BusError(
      'bad_request',
      `tasks[].skills: there is no skill named ${unknown.join(', ')}; ${yours}`,
    );
  }
}

// Stores the mission and sets it going: its tasks are queued, or a model is asked for a plan.
// A mission from the API or a schedule says in its conversation that it started (which also
// finds the user's conversation when none is named, and refuses one that is not theirs); one
// started by the model needs no such note: the model's own reply says it.
// With an idempotency key the mission's id is derived from the user and the key, so a retry, or
// a request racing this one, stores the same start note and finds the mission the first made.
export async function createMission(
  deps: MissionDeps,
  request: CreateMission,
): Promise<MissionDetail> {
  const { idempotencyKey, userId } = request;
  if (idempotencyKey !== undefined) {
    const existing = await findMissionByKey(deps.pool, userId, idempotencyKey);
    if (existing) return takeUpAgain(deps, existing);
  }
  if (request.tasks) {
    checkToolNames(deps, request.tasks);
    await checkSkillNames(deps, userId, request.tasks);
  }
  const id =
    idempotencyKey === undefined
      ? randomUUID()
      : uuidv5(`${userId}\n${idempotencyKey}`, KEYED_MISSION_NAMESPACE);
  let conversationId = request.conversationId;
  if (request.createdBy !== 'model' || !conversationId) {
    const { message } = await deps.bus.request(memoryAppend, {
      userId,
      conversationId,
      role: 'assistant',
      content: startNote(request.objective, request.tasks?.length),
      idempotencyKey: `mission:${id}:start`,
      metadata: { missionId: id },
    });
    conversationId = message.conversationId;
  }
  const mission = { id, userId };
  const status = request.tasks ? 'running' : 'planning';
  const isInserted = await withTransaction(deps.pool, async (db) => {
    const inserted = await insertMission(db, {
      ...mission,
      conversationId,
      objective: request.objective,
      status,
      createdBy: request.createdBy,
      sourceRunId: request.sourceRunId,
      maxTokens: request.maxTokens ?? deps.defaults.maxTokens,
      maxCostUsd: request.maxCostUsd ?? deps.defaults.maxCostUsd,
      idempotencyKey,
      timeZone: request.userTimeZone,
      trace: activeSpanContext(),
    });
    if (inserted && request.tasks) await insertTasks(db, mission, withIds(request.tasks));
    return inserted;
  });
  if (!isInserted) {
    const first = idempotencyKey && (await findMissionByKey(deps.pool, userId, idempotencyKey));
    if (!first) throw new BusError('conflict', 'mission id already in use');
    return takeUpAgain(deps, first);
  }
  // Told before any work is queued, so no task's news can come first.
  await announceMission(
    deps,
    { ...mission, objective: request.objective, status, conversationId },
    { change: 'started' },
  );
  if (request.tasks) await advanceMission(deps, userId, id);
  else await queueWork(deps.bus, { step: 'plan', userId, missionId: id });
  return getMission(deps.pool, userId, id);
}

// The mission an earlier request with the same key made. Its work is queued again, as on a
// start: that request may have failed after storing it and before queueing its work, and what
// is still queued is de-duplicated by its message id.
async function takeUpAgain(deps: MissionDeps, mission: StoredMission): Promise<MissionDetail> {
  await resumeMission(deps, mission);
  return getMission(deps.pool, mission.userId, mission.id);
}

// Queues the next work of an unfinished mission again (a cancelled one still owes its report);
// a finished one has none.
export async function resumeMission(deps: MissionDeps, mission: StoredMission): Promise<void> {
  const { userId, id: missionId, status } = mission;
  if (status === 'planning') await queueWork(deps.bus, { step: 'plan', userId, missionId });
  else if (status === 'running') await advanceMission(deps, userId, missionId);
  else if (status === 'reporting' || (status === 'cancelled' && !mission.reportMessageId)) {
    await queueWork(deps.bus, { step: 'report', userId, missionId });
  }
}

type MissionUpdate =
  | { change: 'started' }
  | { change: 'task_finished'; task: StoredTask }
  // The report's text as the conversation shows it, for the channels that show it.
  | { change: 'ended'; reportMessageId: string; report: string };

// Tells the mission's user, on their live event stream, that it started, that one of its tasks
// finished, or that it ended, where its report is and what it says.
export async function announceMission(
  deps: MissionDeps,
  mission: Pick<StoredMission, 'id' | 'userId' | 'objective' | 'status' | 'conversationId'>,
  update: MissionUpdate,
): Promise<void> {
  const about = update.change === 'task_finished' ? `task:${update.task.id}` : update.change;
  await publishUserEvent(deps.bus, mission.userId, `mission:${mission.id}:${about}`, {
    type: 'mission_updated',
    occurredAt: new Date().toISOString(),
    mission: {
      id: mission.id,
      objective: mission.objective,
      status: mission.status,
      conversationId: mission.conversationId,
    },
    change: update.change,
    ...(update.change === 'task_finished'
      ? {
          task: {
            id: update.task.id,
            number: update.task.number,
            title: update.task.title,
            status: update.task.status,
          },
        }
      : {}),
    ...(update.change === 'ended'
      ? { reportMessageId: update.reportMessageId, report: cutEventText(update.report) }
      : {}),
  });
}

function startNote(objective: string, tasks: number | undefined): string {
  const plan = tasks ? `its ${tasks} tasks` : 'its tasks (I am planning them now)';
  return `I started a mission: ${objective}\nI'll work on ${plan} in the background and post the report here.`;
}

export function withIds(tasks: readonly MissionTaskPlan[]) {
  return tasks.map((task) => ({
    id: randomUUID(),
    title: task.title,
    brief: task.brief,
    dependsOn: [...new Set(task.dependsOn ?? [])],
    tools: task.tools,
    skills: [...new Set(task.skills ?? [])],
  }));
}

export async function getMission(pool: Pool, userId: string, id: string): Promise<MissionDetail> {
  const mission = await findMission(pool, userId, id);
  if (!mission) throw new BusError('not_found', 'mission not found');
  // Questions first, then tasks: a question and its task's `waiting` commit together, so a
  // question seen means its task is seen waiting (read in parallel, the two could disagree).
  const pending = await listPendingQuestions(pool, { userId, missionId: id });
  const tasks = await listTasks(pool, userId, id);
  const { userId: _user, timeZone: _zone, ...shown } = mission;
  const questions = pending.map(publicQuestion);
  return {
    ...shown,
    tasks: tasks.map(({ missionId: _mission, userId: _owner, ...task }) => task),
    question: questions[0] ?? null,
    questions,
  };
}

const FINISHED_TASK = new Set(['completed', 'failed', 'skipped']);

// Moves a running mission on: tasks whose dependencies completed are queued, tasks that depend
// on one that did not are skipped, and once every task has ended the report is queued. Holds the
// mission's row lock, so two tasks ending at once move it on once. Publishing again what is
// already queued is harmless (the message ids de-duplicate it), which is what lets a redelivered
// job simply call this again.
export async function advanceMission(deps: MissionDeps, userId: string, missionId: string) {
  const work = await withTransaction(deps.pool, async (db): Promise<MissionWork[]> => {
    const mission = await lockMission(db, userId, missionId);
    if (!mission || mission.status !== 'running') return [];
    const tasks = await listTasks(db, userId, missionId);
    const byNumber = new Map(tasks.map((task) => [task.number, task]));
    // Skipping one task may skip the tasks after it that depend on it: one pass in plan order
    // settles them all, since a task depends only on tasks before it.
    for (const task of tasks) {
      if (task.status !== 'pending') continue;
      const needed = task.dependsOn.map((number) => byNumber.get(number));
      const missed = needed.find(
        (other) => other && other.status !== 'completed' && FINISHED_TASK.has(other.status),
      );
      if (missed) {
        task.status = 'skipped';
        await setTaskStatus(db, task.id, 'skipped', {
          error: {
            code: 'conflict',
            message: `task ${missed.number} (${missed.title}) did not complete`,
          },
        });
      } else if (needed.every((other) => other?.status === 'completed')) {
        task.status = 'queued';
        await setTaskStatus(db, task.id, 'queued');
      }
    }
    if (tasks.every((task) => FINISHED_TASK.has(task.status))) {
      await setMissionStatus(db, missionId, 'reporting');
      return [{ step: 'report', userId, missionId }];
    }
    return tasks
      .filter((task) => task.status === 'queued')
      .map((task) => ({ step: 'task', userId, missionId, taskId: task.id }));
  });
  for (const item of work) await queueWork(deps.bus, item);
}

// `again` names a later run of the same step (a task going on after its question): its message
// id must differ from the first's, which the stream would otherwise drop as a duplicate.
export async function queueWork(bus: Bus, work: MissionWork, again?: string): Promise<void> {
  const key = work.step === 'task' ? `task:${work.taskId}` : work.step;
  await publishWork(
    bus,
    missionWork,
    work,
    `mission:${work.missionId}:${key}${again ? `:${again}` : ''}`,
  );
}

// Tasks not started, or waiting for an answer, are skipped (their questions are no longer
// asked); running ones stop before their next model call (the budget says so); the report,
// written without a model, says what was done.
export async function cancelMission(
  deps: MissionDeps,
  userId: string,
  id: string,
): Promise<MissionDetail> {
  await withTransaction(deps.pool, async (db) => {
    const mission = await lockMission(db, userId, id);
    if (!mission) throw new BusError('not_found', 'mission not found');
    if (!['planning', 'running'].includes(mission.status)) {
      throw new BusError('conflict', `the mission is already ${mission.status}`);
    }
    for (const task of await listTasks(db, userId, id)) {
      if (task.status === 'pending' || task.status === 'queued' || task.status === 'waiting') {
        await setTaskStatus(db, task.id, 'skipped', {
          error: { code: 'cancelled', message: 'the mission was cancelled' },
        });
      }
    }
    await cancelQuestions(db, id);
    await setMissionStatus(db, id, 'cancelled', {
      code: 'cancelled',
      message: 'cancelled by the user',
    });
  });
  await queueWork(deps.bus, { step: 'report', userId, missionId: id });
  return getMission(deps.pool, userId, id);
}

// The mission's caps and its cancellation, as every model call of its planning, tasks and
// report sees them. Tasks running in parallel may each make the call that crosses a cap, so a
// mission can end over it by at most one call per task running.
export function missionBudget(pool: Pool, userId: string, missionId: string): LoopBudget {
  return {
    async exhausted() {
      const mission = await findMission(pool, userId, missionId);
      if (!mission) return 'The mission no longer exists.';
      return whyStopped(mission);
    },
    async charge(answer) {
      await chargeMission(pool, missionId, { ...answer.usage, costUsd: answer.costUsd });
    },
  };
}

export function whyStopped(mission: StoredMission): string | undefined {
  if (mission.status === 'cancelled') return 'The mission was cancelled.';
  const tokens = mission.usage.inputTokens + mission.usage.outputTokens;
  if (tokens >= mission.limits.maxTokens) {
    return `The mission reached its cap of ${mission.limits.maxTokens} tokens.`;
  }
  if (mission.costUsd >= mission.limits.maxCostUsd) {
    return `The mission reached its cost cap of $${mission.limits.maxCostUsd}.`;
  }
  return undefined;
}
