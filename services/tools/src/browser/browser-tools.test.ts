import { randomUUID } from 'node:crypto';
import { catchBusError } from '@jarvis/bus/testing';
import {
  type MemoryDocumentsIngestRequest,
  memoryDocumentsIngest,
  TurnEvent,
  toolsInvoke,
  turnEventSubject,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import { startTestSite, stopTestSite, type TestDatabase, type TestSite } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startToolsDatabase } from '../tools-database-fixture';
import { BrowserPool } from './browser-pool';
import { type BrowserRig, startBrowserRig } from './browser-test-fixture';
import {
  createBrowserActTool,
  createBrowserOpenTool,
  createBrowserScreenshotTool,
  createSavePageTool,
} from './browser-tools';
import { closePagesWhenRunsEnd } from './run-end-watcher';
import { getScreenshotPng } from './screenshots-repository';

// The browser tools with real Chromium (sandboxed, as `nobody` when the tests run as root),
// through the guarded proxy and the real tools.invoke RPC, against a local site.

const PAGE_MAX_BYTES = 1_000_000;
const PAGE_TIMEOUT_MS = 3_000;

const PAGES: Record<string, string> = {
  // Its text exists only once its script has run.
  '/js': `<!doctype html><html><head><title>Loading</title></head><body><main id="main"></main>
    <script>
      document.title = 'Rendered by script';
      const main = document.getElementById('main');
      const p = document.createElement('p');
      p.textContent = 'The answer, written by JavaScript, is ' + (6 * 7) + '.';
      main.append(p);
      const a = document.createElement('a');
      a.href = '/form';
      a.textContent = 'The form';
      main.append(a);
    </script></body></html>`,
  '/form': `<!doctype html><html><head><title>Form</title></head><body>
    <label for="name">Name</label><input id="name">
    <label for="color">Color</label><select id="color"><option>red</option><option>blue</option></select>
    <button onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value + ' in ' + document.getElementById('color').value">Greet</button>
    <p id="out">Nobody greeted yet</p><a href="/file">The report</a></body></html>`,
  '/cookie': `<!doctype html><html><head><title>Cookie</title></head><body><p id="c"></p>
    <script>
      document.getElementById('c').textContent = 'cookie before: [' + document.cookie + ']';
      document.cookie = 'seen=yes; path=/';
    </script></body></html>`,
  // Much text and many links.
  '/long': `<!doctype html><html><head><title>Long</title></head><body>${Array.from(
    { length: 100 },
    (_, i) =>
      `<p>Paragraph ${i} ${'of a long article about the ferries and trams of Lisbon, '.repeat(4)}</p><a href="/article/${i}/${'x'.repeat(80)}">${'Link text '.repeat(12)}${i}</a>`,
  ).join('')}</body></html>`,
  // Opens two more windows as it loads.
  '/popups': `<!doctype html><html><head><title>Popups</title></head><body><p>popping</p>
    <script>window.open('/js'); window.open('/form', '_blank');</script></body></html>`,
  // Its load event never fires: an image that never comes.
  '/never': `<!doctype html><html><head><title>Never</title></head><body><p>almost</p><img src="/hang"></body></html>`,
  '/busy': `<!doctype html><html><head><title>Busy</title></head><body>
    <canvas id="c" width="1280" height="800"></canvas><script>
      const ctx = document.getElementById('c').getContext('2d');
      const image = ctx.createImageData(1280, 800);
      // Four levels a channel: too much for 600 KiB at 1280 × 800, not at the next size.
      for (let i = 0; i < image.data.length; i++) image.data[i] = i % 4 === 3 ? 255 : Math.floor(Math.random() * 4) * 85;
      ctx.putImageData(image, 0, 0);
    </script></body></html>`,
};

let site: TestSite;
let rig: BrowserRig;
let db: TestDatabase;
const ingested: MemoryDocumentsIngestRequest[] = [];
const USER_ID = randomUUID();

beforeAll(async () => {
  site = await startTestSite((request, response) => {
    const path = new URL(request.url ?? '/', 'http://site').pathname;
    if (path === '/hang') return;
    if (path === '/file') {
      response.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="report.bin"',
      });
      response.end(Buffer.alloc(10_000, 1));
      return;
    }
    if (path === '/big-chunked') {
      // No length said: the proxy can only count and cut it midway.
      response.writeHead(200, { 'content-type': 'text/html' });
      const chunk = `<p>${'y'.repeat(64_000)}</p>`;
      for (let sent = 0; sent < 3 * PAGE_MAX_BYTES; sent += chunk.length) response.write(chunk);
      response.end();
      return;
    }
    if (path === '/big') {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(`<p>${'x'.repeat(3 * PAGE_MAX_BYTES)}</p>`);
      return;
    }
    const page = PAGES[path];
    if (!page) {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('no such page');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  db = await startToolsDatabase();
  rig = await startBrowserRig({
    allowed: `127.0.0.1:${site.port}`,
    pool: { pageTimeoutMs: PAGE_TIMEOUT_MS, pageMaxBytes: PAGE_MAX_BYTES, maxPages: 2 },
    register(registry, { guard, pool, server }) {
      registry.register(createBrowserOpenTool({ guard, pool }));
      registry.register(createBrowserScreenshotTool({ guard, pool, db: db.pool }));
      registry.register(createBrowserActTool({ guard, pool }));
      registry.register(createSavePageTool({ guard, pool, bus: server, ingestTimeoutMs: 5_000 }));
    },
  });
  // Memory's side of save_page, as a stand-in on the same bus: the request is checked against
  // the real contract, and answered as memory would.
  rig.server.serve(memoryDocumentsIngest, async (request) => {
    ingested.push(request);
    return {
      document: {
        id: randomUUID(),
        title: request.title,
        contentType: request.contentType,
        mediaType: request.contentType,
        source: request.source ?? null,
        sizeChars: request.content?.length ?? 0,
        chunkCount: 1,
        chunks: 1,
        metadata: {},
        createdAt: new Date().toISOString(),
      },
    };
  });
  closePagesWhenRunsEnd(rig.server, rig.pool);
}, 60_000);

afterAll(async () => {
  await rig?.stop();
  await db?.stop();
  await stopTestSite(site);
});

function invoke(name: string, args: Record<string, unknown>, runId?: string, timeoutMs = 15_000) {
  return rig.client.request(
    toolsInvoke,
    { userId: USER_ID, runId, name, arguments: args, timeoutMs },
    { timeoutMs: timeoutMs + 2_000 },
  );
}

describe('browser tools', { timeout: 30_000 }, () => {
  it('runs Chromium with its sandbox on (as nobody, since the tests run as root)', async () => {
    const status = await rig.pool.usePage(
      { userId: USER_ID, runId: undefined },
      async ({ page }) => {
        await page.goto('chrome://sandbox');
        return page.locator('body').innerText();
      },
      AbortSignal.timeout(10_000),
    );
    expect(status).toContain('You are adequately sandboxed.');
    expect(status).toMatch(/Seccomp-BPF sandbox\s*Yes/);
  });

  it('opens a page whose text its JavaScript writes, and reads title, text and links', async () => {
    const { result } = await invoke('browser_open', { url: `${site.url}/js` }, randomUUID());
    expect(result).toMatchObject({
      notice: expect.stringMatching(/^Untrusted page data/),
      url: `${site.url}/js`,
      status: 200,
      title: 'Rendered by script',
      text: expect.stringContaining('The answer, written by JavaScript, is 42.'),
      truncated: false,
      links: [{ text: 'The form', url: `${site.url}/form` }],
    });
  });

  it('keeps a long page’s answer within the orchestrator’s cap on a tool result', async () => {
    const { result } = await invoke('browser_open', { url: `${site.url}/long` });
    expect(result).toMatchObject({ truncated: true });
    expect((result as { links: unknown[] }).links.length).toBeGreaterThan(5);
    expect(JSON.stringify(result).length).toBeLessThanOrEqual(8_000);
  });

  it('screenshots the run’s open page into the screenshots table', async () => {
    const runId = randomUUID();
    await invoke('browser_open', { url: `${site.url}/js` }, runId);
    const { result } = await invoke('browser_screenshot', {}, runId);
    expect(result).toMatchObject({
      url: `${site.url}/js`,
      title: 'Rendered by script',
      screenshot: { width: 1280, height: 800 },
    });
    const { id, path } = (result as { screenshot: { id: string; path: string } }).screenshot;
    expect(path).toBe(`/v1/screenshots/${id}`);
    const png = await getScreenshotPng(db.pool, USER_ID, id);
    expect(png?.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 13, 10, 26, 10]));
    // Width and height as the PNG's header has them.
    expect(png?.readUInt32BE(16)).toBe(1280);
    expect(png?.readUInt32BE(20)).toBe(800);
  });

  it('retakes a screenshot too big to store at a smaller size', async () => {
    const { result } = await invoke(
      'browser_screenshot',
      { url: `${site.url}/busy` },
      randomUUID(),
    );
    const shot = (result as { screenshot: { id: string; width: number } }).screenshot;
    expect(shot.width).toBeLessThan(1280);
    const png = await getScreenshotPng(db.pool, USER_ID, shot.id);
    expect(png?.length).toBeLessThanOrEqual(600 * 1024);
  });

  it('says so when a run has no page to screenshot or act on', async () => {
    const runId = randomUUID();
    const shot = await catchBusError(invoke('browser_screenshot', {}, runId));
    expect(shot.message).toMatch(/no page open: call browser_open first/);
    const act = await catchBusError(
      invoke('browser_act', { action: 'click', role: 'button', name: 'Greet' }, runId),
    );
    expect(act.message).toMatch(/no page open/);
  });

  it('types, selects and clicks by role and name on the run’s page', async () => {
    const runId = randomUUID();
    await invoke('browser_open', { url: `${site.url}/form` }, runId);
    await invoke(
      'browser_act',
      { action: 'type', role: 'textbox', name: 'Name', text: 'Ada' },
      runId,
    );
    await invoke(
      'browser_act',
      { action: 'select', role: 'combobox', name: 'Color', text: 'blue' },
      runId,
    );
    const { result } = await invoke(
      'browser_act',
      { action: 'click', role: 'button', name: 'Greet' },
      runId,
    );
    expect(result).toMatchObject({
      action: 'click',
      text: expect.stringContaining('Hello, Ada in blue'),
    });
    const missing = await catchBusError(
      invoke('browser_act', { action: 'click', role: 'button', name: 'Delete everything' }, runId),
    );
    expect(missing).toMatchObject({ code: 'not_found' });
    expect(missing.message).toBe('the page has no button named "Delete everything"');
    const download = await catchBusError(
      invoke('browser_act', { action: 'click', role: 'link', name: 'The report' }, runId),
    );
    expect(download).toMatchObject({
      code: 'bad_request',
      message: `the link "The report" started a download of ${site.url}/file; the browser does not download files`,
    });
    const noText = await catchBusError(
      invoke('browser_act', { action: 'type', role: 'textbox', name: 'Name' }, runId),
    );
    expect(noText).toMatchObject({ code: 'bad_request' });
  });

  it('gives each run its own cookies, and closes a run’s page when its turn ends', async () => {
    const first = randomUUID();
    const second = randomUUID();
    await invoke('browser_open', { url: `${site.url}/cookie` }, first);
    const again = await invoke('browser_open', { url: `${site.url}/cookie` }, first);
    expect(again.result).toMatchObject({
      text: expect.stringContaining('cookie before: [seen=yes]'),
    });
    const other = await invoke('browser_open', { url: `${site.url}/cookie` }, second);
    expect(other.result).toMatchObject({ text: expect.stringContaining('cookie before: []') });

    // A turn that pauses for approval keeps its page; one that ends closes it.
    const turn = { turnId: randomUUID(), conversationId: randomUUID() };
    const done = {
      type: 'done' as const,
      ...turn,
      runId: first,
      reply: { id: randomUUID(), role: 'assistant' as const, content: 'ok' },
      usage: { inputTokens: 1, outputTokens: 1 },
    };
    rig.client.publish(turnEventSubject(turn.turnId), TurnEvent, done);
    await expect.poll(() => rig.pool.openPages(), { timeout: 5_000 }).toBe(1);
    const closed = await catchBusError(invoke('browser_screenshot', {}, first));
    expect(closed.message).toMatch(/no page open/);
    await rig.pool.closeRun(second);
    expect(rig.pool.openPages()).toBe(0);
  });

  it('closes the popups a page opens: one page a run', async () => {
    const runId = randomUUID();
    await invoke('browser_open', { url: `${site.url}/popups` }, runId);
    const pages = await rig.pool.useCurrentPage(
      { userId: USER_ID, runId },
      async ({ page }) => {
        // The popups open after the load; give them the time to, and to be closed.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return page
          .context()
          .pages()
          .map((each) => each.url());
      },
      AbortSignal.timeout(10_000),
    );
    expect(pages).toEqual([`${site.url}/popups`]);
    await rig.pool.closeRun(runId);
  });

  it('says the browser could not start, and why, when it cannot', async () => {
    const broken = new BrowserPool({
      executablePath: '/nonexistent/chromium',
      user: 'nobody',
      maxPages: 1,
      pageTimeoutMs: 1_000,
      pageMaxBytes: 1_000_000,
      idleMs: 1_000,
      proxy: rig.proxy,
      logger: createLogger('browser-test', 'silent'),
    });
    try {
      const error = await catchBusError(
        broken.usePage(
          { userId: USER_ID, runId: randomUUID() },
          async () => 'opened',
          AbortSignal.timeout(10_000),
        ),
      );
      expect(error).toMatchObject({ code: 'unavailable' });
      expect(error.message).toMatch(/^the browser could not start: /);
      expect(broken.openPages()).toBe(0);
    } finally {
      await broken.close();
    }
  });

  it('closes a run’s page once it has been idle for idleMs', async () => {
    const quick = new BrowserPool({
      executablePath: '/usr/bin/chromium',
      user: 'nobody',
      maxPages: 1,
      pageTimeoutMs: 5_000,
      pageMaxBytes: 1_000_000,
      idleMs: 500,
      proxy: rig.proxy,
      logger: createLogger('browser-test', 'silent'),
    });
    try {
      const owner = { userId: USER_ID, runId: randomUUID() };
      const title = await quick.usePage(
        owner,
        async ({ page }) => {
          await page.goto(`${site.url}/js`);
          return page.title();
        },
        AbortSignal.timeout(15_000),
      );
      expect(title).toBe('Rendered by script');
      expect(quick.openPages()).toBe(1);
      await expect.poll(() => quick.openPages(), { timeout: 5_000 }).toBe(0);
    } finally {
      await quick.close();
    }
  });

  it('starts Chromium again after it went away', async () => {
    const runId = randomUUID();
    await invoke('browser_open', { url: `${site.url}/js` }, runId);
    await rig.pool.useCurrentPage(
      { userId: USER_ID, runId },
      async ({ page }) => page.context().browser()?.close(),
      AbortSignal.timeout(10_000),
    );
    await expect.poll(() => rig.pool.openPages()).toBe(0);
    const { result } = await invoke('browser_open', { url: `${site.url}/js` }, runId);
    expect(result).toMatchObject({ title: 'Rendered by script' });
    await rig.pool.closeRun(runId);
  });

  it('refuses a page that starts a download, with a clear error', async () => {
    const error = await catchBusError(
      invoke('browser_open', { url: `${site.url}/file` }, randomUUID()),
    );
    expect(error).toMatchObject({ code: 'bad_request' });
    expect(error.message).toMatch(/started a file download; the browser does not download files/);
  });

  it('gives up on a page that never finishes loading, within the page time limit', async () => {
    const started = Date.now();
    const error = await catchBusError(
      invoke('browser_open', { url: `${site.url}/never` }, randomUUID()),
    );
    expect(error).toMatchObject({
      code: 'bad_request',
      message: `${site.url}/never did not finish loading within 3 s`,
    });
    expect(Date.now() - started).toBeLessThan(PAGE_TIMEOUT_MS + 3_000);
  });

  it('stops a page past its byte limit, whether its length is said or not', async () => {
    for (const path of ['/big', '/big-chunked']) {
      const started = Date.now();
      const error = await catchBusError(
        invoke('browser_open', { url: `${site.url}${path}` }, randomUUID()),
      );
      expect(error).toMatchObject({ code: 'payload_too_large' });
      expect(error.message).toMatch(/received more than 1 MB; the browser stops a page past that$/);
      expect(Date.now() - started).toBeLessThan(PAGE_TIMEOUT_MS + 2_000);
    }
  });

  it('keeps at most maxPages pages open: the least recently used idle one makes room', async () => {
    const runs = [randomUUID(), randomUUID(), randomUUID()];
    for (const runId of runs) await invoke('browser_open', { url: `${site.url}/js` }, runId);
    expect(rig.pool.openPages()).toBe(2);
    // The first run's page was the one closed.
    const closed = await catchBusError(invoke('browser_screenshot', {}, runs[0]));
    expect(closed.message).toMatch(/no page open/);
    await Promise.all(runs.map((runId) => rig.pool.closeRun(runId)));
  });

  it('queues calls past maxPages while every page is busy', async () => {
    const started = Date.now();
    // Three never-loading pages, two slots: the third waits for one of the first two to time out.
    const runs = [randomUUID(), randomUUID(), randomUUID()];
    const errors = await Promise.all(
      runs.map((runId) =>
        catchBusError(invoke('browser_open', { url: `${site.url}/never` }, runId)),
      ),
    );
    await Promise.all(runs.map((runId) => rig.pool.closeRun(runId)));
    expect(errors.map((error) => error.message)).toEqual(
      runs.map(() => `${site.url}/never did not finish loading within 3 s`),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * PAGE_TIMEOUT_MS - 500);
  });

  it('saves nothing of a page that never loads or that is a download', async () => {
    const before = ingested.length;
    const never = await catchBusError(invoke('save_page', { url: `${site.url}/never` }));
    expect(never).toMatchObject({ code: 'bad_request' });
    const file = await catchBusError(invoke('save_page', { url: `${site.url}/file` }));
    expect(file).toMatchObject({ code: 'bad_request' });
    expect(ingested.length).toBe(before);
  });

  it('saves a page read through the browser into documents', async () => {
    const openBefore = rig.pool.openPages();
    const { result } = await invoke('save_page', { url: `${site.url}/js` });
    expect(result).toMatchObject({ saved: true, url: `${site.url}/js`, document: { chunks: 1 } });
    expect(ingested.at(-1)).toMatchObject({
      userId: USER_ID,
      title: 'Rendered by script',
      contentType: 'text/plain',
      source: `${site.url}/js`,
      content: expect.stringContaining('The answer, written by JavaScript, is 42.'),
    });
    // Outside a run the page was the call's alone.
    expect(rig.pool.openPages()).toBe(openBefore);
  });
});
