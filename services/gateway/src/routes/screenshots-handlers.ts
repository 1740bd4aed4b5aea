import type { Bus } from '@jarvis/bus';
import { type GatewayHandler, ScreenshotIdParams, toolsScreenshotsGet } from '@jarvis/contracts';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

// A screenshot is a picture of a page the agent visited, served from the API's own origin: were
// it taken for a document (opened in a tab, or sniffed as HTML), it must not be able to run or
// load anything there. So: no sniffing, a policy that allows nothing and sandboxes the document,
// and no cache but the user's own browser's memory (pages may show private data, and a shared
// computer's disk cache outlives the session). The web UI keeps the object URLs it made.
const SCREENSHOT_HEADERS = {
  'content-type': 'image/png',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'private, no-store',
};

export function createScreenshotsHandlers(deps: {
  bus: Bus;
}): Record<Extract<GatewayHandler, 'getScreenshot'>, RequestHandler[]> {
  return {
    getScreenshot: [
      async (req, res) => {
        const { id } = parseBody(ScreenshotIdParams, req.params);
        const { userId } = principalOf(req);
        const reply = await deps.bus.request(toolsScreenshotsGet, { userId, id });
        const png = Buffer.from(reply.data, 'base64');
        res.status(200).set(SCREENSHOT_HEADERS).setHeader('content-length', png.length);
        res.end(png);
      },
    ],
  };
}
