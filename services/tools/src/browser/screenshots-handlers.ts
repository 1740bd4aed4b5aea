import { type Bus, BusError } from '@jarvis/bus';
import { toolsScreenshotsGet } from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import { getScreenshotPng } from './screenshots-repository';

// tools.screenshots.get: the gateway's GET /v1/screenshots/{id}. Another user's screenshot is
// not_found, like one that never was, so an id tells nobody else that it exists.
export function registerScreenshotHandlers(deps: { bus: Bus; pool: Queryable }) {
  const { bus, pool } = deps;
  return [
    bus.serve(toolsScreenshotsGet, async (request) => {
      const png = await getScreenshotPng(pool, request.userId, request.id);
      if (!png) throw new BusError('not_found', 'no such screenshot');
      return { mediaType: 'image/png' as const, data: png.toString('base64') };
    }),
  ];
}
