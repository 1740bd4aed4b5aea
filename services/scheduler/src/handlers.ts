import {
  schedulerSchedulesCreate,
  schedulerSchedulesDelete,
  schedulerSchedulesGet,
  schedulerSchedulesList,
  schedulerSchedulesPreview,
  schedulerSchedulesRuns,
  schedulerSchedulesSnooze,
  schedulerSchedulesUpdate,
} from '@jarvis/contracts';
import {
  createSchedule,
  getSchedule,
  listScheduleRuns,
  listUserSchedules,
  previewCron,
  removeSchedule,
  type ScheduleDeps,
  snoozeSchedule,
  updateSchedule,
} from './services/schedule-service';
import { toSchedule, toScheduleRun } from './services/schedule-views';

export function registerHandlers(deps: ScheduleDeps) {
  const { bus, pool } = deps;
  return [
    bus.serve(schedulerSchedulesCreate, async (request) => ({
      schedule: toSchedule(await createSchedule(deps, request)),
    })),
    bus.serve(schedulerSchedulesList, async (request) => ({
      schedules: (await listUserSchedules(pool, request.userId, request.status)).map(toSchedule),
    })),
    bus.serve(schedulerSchedulesGet, async (request) => ({
      schedule: toSchedule(await getSchedule(pool, request)),
    })),
    bus.serve(schedulerSchedulesUpdate, async (request) => ({
      schedule: toSchedule(await updateSchedule(deps, request)),
    })),
    bus.serve(schedulerSchedulesDelete, async (request) => {
      await removeSchedule(pool, request);
      return {};
    }),
    bus.serve(schedulerSchedulesSnooze, async (request) => ({
      schedule: toSchedule(await snoozeSchedule(deps, request)),
    })),
    bus.serve(schedulerSchedulesRuns, async (request) => {
      const { runs, nextBefore } = await listScheduleRuns(pool, request);
      return {
        runs: runs.map(toScheduleRun),
        ...(nextBefore ? { nextBefore: nextBefore.toISOString() } : {}),
      };
    }),
    bus.serve(schedulerSchedulesPreview, async (request) => ({
      times: previewCron(request).map((time) => time.toISOString()),
    })),
  ];
}
