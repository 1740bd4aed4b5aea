import type { Bus } from '@jarvis/bus';
import { schedulerSchedulesList } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { listApprovals } from '../repositories/approvals-repository';
import { listMissions, listTasks } from '../repositories/missions-repository';

// How long a turn waits for the user's current state. It is worth a few lines of context, never a
// slower answer: a source that has not answered by then is left out of this turn's prompt.
const ACTIVE_STATE_TIMEOUT_MS = 500;
// Lines of each kind (approvals, missions, reminders) at most: the prompt shows the state, the
// API lists it.
const LINES_PER_KIND = 5;
const DUE_WITHIN_MS = 24 * 60 * 60 * 1_000;
// Characters of a user's or model's text (arguments, an objective, a reminder) a line quotes.
const QUOTED_MAX_CHARS = 120;

type ActiveStateDeps = { bus: Bus; pool: Pool };

// What is going on for the user now, as lines of the prompt's `Current state:` section: pending
// approvals, running missions with their progress, and their reminders due within 24 hours.
// Never fails: a source that fails or is late gives no lines.
export async function loadActiveState(
  deps: ActiveStateDeps,
  userId: string,
  now: Date,
): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([]), ACTIVE_STATE_TIMEOUT_MS);
  });
  const sources = [
    pendingApprovals(deps.pool, userId, now),
    runningMissions(deps.pool, userId),
    dueReminders(deps.bus, userId, now),
  ].map((source) => Promise.race([source.catch(() => []), late]));
  try {
    return (await Promise.all(sources)).flat();
  } finally {
    clearTimeout(timer);
  }
}

async function pendingApprovals(pool: Pool, userId: string, now: Date): Promise<string[]> {
  const approvals = await listApprovals(pool, userId, 'pending', LINES_PER_KIND);
  return approvals
    .filter((approval) => Date.parse(approval.expiresAt) > now.getTime())
    .map(
      (approval) =>
        `Waiting for the user's approval: ${approval.toolName} ${quote(JSON.stringify(approval.arguments))}`,
    );
}

async function runningMissions(pool: Pool, userId: string): Promise<string[]> {
  const missions = await listMissions(
    pool,
    { userId, status: 'running', before: undefined },
    LINES_PER_KIND,
  );
  return Promise.all(
    missions.map(async (mission) => {
      const tasks = await listTasks(pool, userId, mission.id);
      const done = tasks.filter((task) => task.status === 'completed').length;
      const waiting = tasks.filter((task) => task.status === 'waiting').length;
      const asks = waiting > 0 ? `, ${waiting} waiting for the user's answer` : '';
      return `Mission running: ${quote(mission.objective)} (${done} of ${tasks.length} tasks done${asks})`;
    }),
  );
}

// Only reminders (action `remind`): what the user asked to be told and may ask about ("what do I
// have today?"). A scheduled request or mission is Jarvis's own work, which the user reads in
// its reply or in the missions view when it runs; listed here it would read as something the
// user has to do, and take the lines of the reminders.
async function dueReminders(bus: Bus, userId: string, now: Date): Promise<string[]> {
  const { schedules } = await bus.request(
    schedulerSchedulesList,
    { userId, status: 'active' },
    { timeoutMs: ACTIVE_STATE_TIMEOUT_MS },
  );
  const until = now.getTime() + DUE_WITHIN_MS;
  const lines: string[] = [];
  for (const { action, nextRunAt, nextRunText } of schedules) {
    if (action.type !== 'remind' || lines.length >= LINES_PER_KIND) continue;
    const at = nextRunAt ? Date.parse(nextRunAt) : Number.NaN;
    if (at > now.getTime() && at <= until) {
      lines.push(`Reminder due ${nextRunText ?? nextRunAt}: ${quote(action.text)}`);
    }
  }
  return lines;
}

// Text that is not the prompt's own, as a JSON string: one line, read as data.
function quote(text: string): string {
  const cut = text.length > QUOTED_MAX_CHARS ? `${text.slice(0, QUOTED_MAX_CHARS - 1)}…` : text;
  return JSON.stringify(cut);
}
