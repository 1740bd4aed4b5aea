import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Screenshots browser_screenshot stores in the tools service, and how the gateway reads one back
// for GET /v1/screenshots/{id}.

// The largest PNG the tools service stores: its base64 (about 800 KiB) must fit one NATS message
// (1 MiB by default) beside the reply's envelope. A larger shot is retaken smaller, not cut.
export const SCREENSHOT_MAX_BYTES = 600 * 1024;

export function screenshotPath(id: string): string {
  return `/v1/screenshots/${id}`;
}

// What a tool result carries for a screenshot it took, so the chat and the run view can show it:
// `path` is the gateway's address of the PNG, relative to the API's origin.
export const ToolScreenshot = z
  .object({
    id: Id,
    path: z.string(),
    width: z.number().int().positive(),
    height: z.number().int().positive(),
  })
  .refine((shot) => shot.path === screenshotPath(shot.id), {
    message: 'must be /v1/screenshots/{id}',
    path: ['path'],
  });
export type ToolScreenshot = z.infer<typeof ToolScreenshot>;

// The screenshot a tool's result carries, if it carries a well-formed one: what the orchestrator
// passes on to the chat and the run view, which fetch `path` with the user's key (so it must be
// one of the API's own screenshot addresses, never a URL the page could name).
export function screenshotOf(result: unknown): ToolScreenshot | undefined {
  if (typeof result !== 'object' || result === null || !('screenshot' in result)) return undefined;
  const parsed = ToolScreenshot.safeParse(result.screenshot);
  return parsed.success ? parsed.data : undefined;
}

// GET /v1/screenshots/{id}'s path.
export const ScreenshotIdParams = z.strictObject({ id: Id });

// One of the user's screenshots. not_found when there is none by that id for this user (never
// taken, another user's, or pruned after SCREENSHOT_RETENTION_DAYS).
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
