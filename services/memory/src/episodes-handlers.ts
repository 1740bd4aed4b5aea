import type { Bus } from '@jarvis/bus';
import { memoryEpisodesRollup, memoryEpisodesWeeksPending } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  DEFAULT_ROLLUP,
  listUsersPendingRollup,
  rollUpEpisodes,
} from './services/roll-up-episodes';

// The weekly roll-up of episodes, which the scheduler's weekly system job drives.
export function registerEpisodeHandlers(bus: Bus, pool: Pool, settings = DEFAULT_ROLLUP) {
  return [
    bus.serve(memoryEpisodesRollup, (request) => rollUpEpisodes(bus, pool, settings, request)),
    bus.serve(memoryEpisodesWeeksPending, (request) => listUsersPendingRollup(pool, request)),
  ];
}
