import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Screenshots browser_screenshot stores in the tools service, and how the gateway reads one back
// for GET /v1/screenshots/{id}.

// The largest PNG the tools service stores: its base64 (about 800 KiB) must fit one NATS message
// (1 MiB by default) beside the reply's envelope. A larger shot is retaken smaller, not cut.
export const SCREENSHOT_MAX_BYTES = 600 * 1024;

// What a tool result carries for a screenshot it took, so the chat and the run view can show it:
// `path` is the gateway's address of the PNG, relative to the API's origin.
export const ToolScreenshot = z.object({
  id: Id,
  path: z.string().regex(/^\/v1\/screenshots\/[0-9a-f-]{36}$/),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
});
export type ToolScreenshot = z.infer<typeof ToolScreenshot>;

export function screenshotPath(id: string): string {
  return `/v1/screenshots/${id}`;
}

// One of the user's screenshots. not_found when there is none by that id for this user (never
// taken, another user's, or pruned after SCREENSHOT_RETENTION_DAYS).
// GET /v1/screenshots/{id}'s path.
export const ScreenshotIdParams = z.strictObject({ id: Id });

export const ToolsScreenshotsGetRequest = z.object({ userId: Id, id: Id });
export type ToolsScreenshotsGetRequest = z.infer<typeof ToolsScreenshotsGetRequest>;

export const ToolsScreenshotsGetResponse = z.object({
  mediaType: z.literal('image/png'),
  // The PNG, base64.
  data: z.base64().max(Math.ceil(SCREENSHOT_MAX_BYTES / 3) * 4),
});
export type ToolsScreenshotsGetResponse = z.infer<typeof ToolsScreenshotsGetResponse>;

export const toolsScreenshotsGet = defineRpc(
  'tools.screenshots.get',
  ToolsScreenshotsGetRequest,
  ToolsScreenshotsGetResponse,
);
