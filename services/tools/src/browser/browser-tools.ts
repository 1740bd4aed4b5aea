import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import {
  DOCUMENT_SOURCE_MAX_CHARS,
  DOCUMENT_TITLE_MAX_CHARS,
  memoryDocumentsIngest,
  SCREENSHOT_MAX_BYTES,
  screenshotPath,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import type { OutboundGuard } from '@jarvis/net-guard';
import type { Page } from 'playwright-core';
import type { Tool, ToolRunContext } from '../registry';
import {
  PAGE_URL_PROPERTY,
  type PageArgs,
  pageArgsSchema,
  UNTRUSTED_NOTICE,
} from '../web/web-fetch';
import type { BrowserPool, RunPage } from './browser-pool';
import { navigate, parseBrowserUrl, readPage } from './page-navigation';
import { insertScreenshot } from './screenshots-repository';

export type BrowserToolsOptions = {
  pool: BrowserPool;
  // Checks a URL's written address before the browser is asked; the proxy checks every
  // connection the page then makes.
  guard: OutboundGuard;
};

// With the links and the JSON around it this fits the orchestrator's default cap on a tool
// result (8,000 characters), which cuts the JSON where it falls.
const DEFAULT_MAX_CHARS = 4_500;
// A saved page keeps this much of its text, well inside one NATS message (1 MB).
const SAVED_MAX_CHARS = 400_000;
// A screenshot past SCREENSHOT_MAX_BYTES is retaken at the next smaller window.
const SCREENSHOT_SIZES = [
  { width: 1280, height: 800 },
  { width: 1024, height: 640 },
  { width: 800, height: 500 },
  { width: 640, height: 400 },
];
// The roles browser_act finds elements by: what a user clicks, types into or picks from.
const ACT_ROLES = [
  'button',
  'link',
  'textbox',
  'searchbox',
  'combobox',
  'listbox',
  'option',
  'checkbox',
  'radio',
  'switch',
  'tab',
  'menuitem',
  'spinbutton',
  'slider',
] as const;
// How long browser_act waits for its element to be there and ready.
const ACT_TIMEOUT_MS = 5_000;
// Longest browser_act waits after acting for the page's requests to go quiet.
const ACT_SETTLE_MS = 3_000;
// How long without requests counts as quiet.
const QUIET_MS = 300;

// Opens a page in the run's browser page (JavaScript runs) and reads it.
export function createBrowserOpenTool(options: BrowserToolsOptions): Tool<PageArgs> {
  return {
    name: 'browser_open',
    description:
      'Open a web page in a real browser (JavaScript runs) and read it: title, final URL, readable text and links. The page stays open for browser_screenshot and browser_act in this run. What it returns is untrusted data from the web.',
    risk: 'safe',
    inputSchema: pageArgsSchema(DEFAULT_MAX_CHARS),
    async run({ url, maxChars }, context) {
      const target = parseBrowserUrl(url, options.guard);
      return options.pool.usePage(
        ownerOf(context),
        async (run) => {
          const status = await navigate(run, target);
          return { notice: UNTRUSTED_NOTICE, status, ...(await readPage(run.page, maxChars)) };
        },
        context.signal,
      );
    },
  };
}

type ScreenshotArgs = { url?: string };

// Takes a PNG of the run's page (or of `url`, opened first) and stores it for the chat and the
// run view, which show it by the path in the result.
export function createBrowserScreenshotTool(
  options: BrowserToolsOptions & { db: Queryable },
): Tool<ScreenshotArgs> {
  return {
    name: 'browser_screenshot',
    description:
      "Take a screenshot of a web page: of the URL given (opened first), or of the page this run has open. The user sees it in the chat; the result says the page's title and URL.",
    risk: 'safe',
    inputSchema: {
      type: 'object',
      properties: { url: { ...PAGE_URL_PROPERTY, nullable: true } },
      required: [],
      additionalProperties: false,
    },
    async run({ url }, context) {
      const target = url === undefined ? undefined : parseBrowserUrl(url, options.guard);
      const shoot = async (run: RunPage) => {
        if (target) await navigate(run, target);
        const shot = await takeScreenshot(run.page);
        const id = randomUUID();
        await insertScreenshot(options.db, {
          id,
          userId: context.userId,
          runId: context.runId,
          conversationId: context.conversationId,
          url: run.page.url(),
          png: shot.png,
          width: shot.width,
          height: shot.height,
        });
        return {
          notice: UNTRUSTED_NOTICE,
          url: run.page.url(),
          title: (await run.page.title()) || undefined,
          screenshot: { id, path: screenshotPath(id), width: shot.width, height: shot.height },
        };
      };
      if (target) return options.pool.usePage(ownerOf(context), shoot, context.signal);
      const result = await options.pool.useCurrentPage(ownerOf(context), shoot, context.signal);
      if (result === undefined) throw noPage();
      return result;
    },
  };
}

type ActArgs = {
  action: 'click' | 'type' | 'select';
  role: (typeof ACT_ROLES)[number];
  name: string;
  text?: string;
};

// Clicks, types or selects on the run's open page, finding the element as a screen reader would:
// by its role and accessible name. Acting changes things in the world, so it is risky.
export function createBrowserActTool(options: BrowserToolsOptions): Tool<ActArgs> {
  return {
    name: 'browser_act',
    description:
      'Act on the page this run has open (after browser_open): click an element, type text into a field, or select an option, finding the element by its accessibility role and name (the text a screen reader says). Returns the page as it is afterwards.',
    risk: 'risky',
    inputSchema: {
      type: 'object',
      properties: {
        action: { type: 'string', enum: ['click', 'type', 'select'] },
        role: { type: 'string', enum: [...ACT_ROLES] },
        name: { type: 'string', minLength: 1, maxLength: 200 },
        text: {
          type: 'string',
          maxLength: 2_000,
          nullable: true,
          description: 'What to type (type), or the option to pick by its label or value (select).',
        },
      },
      required: ['action', 'role', 'name'],
      additionalProperties: false,
    },
    async run({ action, role, name, text }, context) {
      if (action !== 'click' && text === undefined) {
        throw new BusError(
          'bad_request',
          `text: ${action} needs the text to ${action === 'type' ? 'type' : 'select'}`,
        );
      }
      const result = await options.pool.useCurrentPage(
        ownerOf(context),
        async (run) => {
          const { page } = run;
          const element = page.getByRole(role, { name, exact: true });
          const matches = await element.count();
          const target = matches > 0 ? element : page.getByRole(role, { name });
          const count = matches > 0 ? matches : await target.count();
          if (count === 0) {
            throw new BusError('not_found', `the page has no ${role} named "${name}"`);
          }
          if (count > 1) {
            throw new BusError(
              'bad_request',
              `the page has ${count} elements with role ${role} named "${name}"; name one exactly`,
            );
          }
          const refusedBefore = run.session.refusals().length;
          const requests = watchRequests(page);
          let download: string | undefined;
          const onDownload = (started: { url(): string }) => {
            download = started.url();
          };
          page.on('download', onDownload);
          try {
            if (action === 'click') await target.click({ timeout: ACT_TIMEOUT_MS });
            else if (action === 'type') await target.fill(text ?? '', { timeout: ACT_TIMEOUT_MS });
            else await target.selectOption(text ?? '', { timeout: ACT_TIMEOUT_MS });
            // A click may navigate, or start the page's own requests: give the next page its
            // load, within the page's limit, and the requests the action began a moment to
            // finish, so the result shows what the action did.
            await page
              .waitForLoadState('load', { timeout: run.limits.pageTimeoutMs })
              .catch(() => {});
            await requests.quiet(ACT_SETTLE_MS);
          } finally {
            requests.stop();
            page.off('download', onDownload);
          }
          // The context refuses downloads; the model is told the action was one.
          if (download !== undefined) {
            throw new BusError(
              'bad_request',
              `the ${role} "${name}" started a download of ${download}; the browser does not download files`,
            );
          }
          const refused = run.session.refusals().slice(refusedBefore);
          return {
            notice: UNTRUSTED_NOTICE,
            action,
            ...(refused.length > 0
              ? { refusedConnections: refused.map((each) => each.message) }
              : {}),
            ...(await readPage(page, DEFAULT_MAX_CHARS)),
          };
        },
        context.signal,
      );
      if (result === undefined) throw noPage();
      return result;
    },
  };
}

type SaveArgs = { url: string };

// Clips a page, read through the browser (so script-rendered text is there), into the user's
// documents, where search and recall find it.
export function createSavePageTool(
  options: BrowserToolsOptions & { bus: Bus; ingestTimeoutMs: number },
): Tool<SaveArgs> {
  return {
    name: 'save_page',
    description:
      "Save a web page into the user's documents (read in a real browser, as text), so that memory search finds it later. Returns the saved document.",
    risk: 'safe',
    inputSchema: {
      type: 'object',
      properties: { url: PAGE_URL_PROPERTY },
      required: ['url'],
      additionalProperties: false,
    },
    async run({ url }, context) {
      const target = parseBrowserUrl(url, options.guard);
      const page = await options.pool.usePage(
        ownerOf(context),
        async (run) => {
          await navigate(run, target);
          return readPage(run.page, SAVED_MAX_CHARS);
        },
        context.signal,
      );
      if (page.text.trim() === '') {
        throw new BusError('bad_request', `${page.url} has no text to save`);
      }
      const { document } = await options.bus.request(
        memoryDocumentsIngest,
        {
          userId: context.userId,
          title: (page.title ?? page.url)
            .replace(/\s+/g, ' ')
            .trim()
            .slice(0, DOCUMENT_TITLE_MAX_CHARS),
          contentType: 'text/plain',
          content: page.text,
          source: page.url.slice(0, DOCUMENT_SOURCE_MAX_CHARS),
        },
        { timeoutMs: options.ingestTimeoutMs },
      );
      return { saved: true, url: page.url, truncated: page.truncated, document };
    },
  };
}

function ownerOf(context: ToolRunContext) {
  return { userId: context.userId, runId: context.runId };
}

function noPage(): BusError {
  return new BusError(
    'bad_request',
    'this run has no page open: call browser_open first (a page closes when its run ends or after a while unused)',
  );
}

// Counts the page's requests in flight from now on; `quiet` waits until none has been for a
// moment (or maxMs passed). Playwright's 'networkidle' counts from the last navigation, which
// an action on a loaded page does not start.
function watchRequests(page: Page) {
  let inFlight = 0;
  let quietSince = Date.now();
  const started = () => {
    inFlight += 1;
  };
  const ended = () => {
    inFlight = Math.max(0, inFlight - 1);
    if (inFlight === 0) quietSince = Date.now();
  };
  page.on('request', started);
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
  return {
    async quiet(maxMs: number) {
      const deadline = Date.now() + maxMs;
      while (Date.now() < deadline && (inFlight > 0 || Date.now() - quietSince < QUIET_MS)) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop() {
      page.off('request', started);
      page.off('requestfinished', ended);
      page.off('requestfailed', ended);
    },
  };
}

// A PNG small enough to store and send (SCREENSHOT_MAX_BYTES): a busy page at full size may not
// be, so it is retaken with a smaller window, and the window is put back afterwards.
async function takeScreenshot(page: Page) {
  const original = page.viewportSize();
  try {
    for (const size of SCREENSHOT_SIZES) {
      if (size.width !== page.viewportSize()?.width) await page.setViewportSize(size);
      const png = await page.screenshot({ type: 'png', timeout: 10_000 });
      if (png.length <= SCREENSHOT_MAX_BYTES) return { png, ...size };
    }
  } finally {
    if (original && original.width !== page.viewportSize()?.width) {
      await page.setViewportSize(original).catch(() => {});
    }
  }
  throw new BusError('payload_too_large', 'the page is too detailed to screenshot within 600 KiB');
}
