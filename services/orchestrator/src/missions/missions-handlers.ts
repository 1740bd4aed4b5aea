import {
  orchestratorMissionsAnswer,
  orchestratorMissionsCancel,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
  orchestratorMissionsList,
} from '@jarvis/contracts';
import { listMissions, listUnfinishedMissions } from '../repositories/missions-repository';
import { pageByCreatedAt } from '../services/runs-service';
import { answerMission } from './mission-questions';
import {
  cancelMission,
  createMission,
  getMission,
  type MissionDeps,
  resumeMission,
} from './mission-service';

export function registerMissionHandlers(deps: MissionDeps) {
  const { bus, pool } = deps;
  return [
    bus.serve(orchestratorMissionsCreate, async (request) => ({
      mission: await createMission(deps, request),
    })),
    bus.serve(orchestratorMissionsList, async (request) => {
      // One more than asked: whether it exists tells if another page follows.
      const found = await listMissions(
        pool,
        {
          userId: request.userId,
          status: request.status,
          before: request.before ? new Date(request.before) : undefined,
        },
        request.limit + 1,
      );
      const { items, nextBefore } = pageByCreatedAt(
        found.map(({ userId: _user, timeZone: _zone, ...mission }) => mission),
        request.limit,
      );
      return nextBefore ? { missions: items, nextBefore } : { missions: items };
    }),
    bus.serve(orchestratorMissionsGet, async (request) => ({
      mission: await getMission(pool, request.userId, request.id),
    })),
    bus.serve(orchestratorMissionsCancel, async (request) => ({
      mission: await cancelMission(deps, request.userId, request.id),
    })),
    bus.serve(orchestratorMissionsAnswer, async (request) => ({
      mission: await answerMission(deps, request),
    })),
  ];
}

// On start: work of unfinished missions whose message was lost (a crash between storing a step
// and queueing the next) is queued again. What is still queued is de-duplicated by its message
// id, or found done by the worker, so queueing it twice is harmless.
export async function resumeMissions(deps: MissionDeps): Promise<void> {
  for (const mission of await listUnfinishedMissions(deps.pool)) await resumeMission(deps, mission);
}
