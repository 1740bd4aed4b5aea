import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RunsGetResponse, ToolScreenshot } from '@jarvis/contracts';
import {
  encryptedPdf,
  isTurnRequest,
  makePdf,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// The web UI in Debian's Chromium against the whole stack: the agent's browser_screenshot of a
// page this test serves is shown in the chat and on the run's page (fetched with the key, shown
// through an object URL under the page's strict policy), and the Documents panel uploads a PDF
// and shows a refusal in words.
const PAGE = `<!doctype html><html><head><title>Tide table</title></head>
  <body><main id="out"></main>
  <script>document.getElementById('out').textContent = 'High tide at 14:05';</script>
  </body></html>`;
// A page to act on: its button shows the answer.
const BUTTON_PAGE = `<!doctype html><html><head><title>Ferry</title></head>
  <body><button type="button" id="go">Next ferry</button><p id="out"></p>
  <script>document.getElementById('go').addEventListener('click', () => {
    document.getElementById('out').textContent = 'The next ferry leaves at 15:30';
  });</script></body></html>`;
const DOCUMENT_TITLE = 'Harbour rules';
// The upload limit, small here so that a file past it is quick to send.
const UPLOAD_MAX_BYTES = 1_048_576;

// Whether an OpenAI-format request offered the model browser_screenshot.
function offersScreenshot(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || !('tools' in body)) return false;
  if (!Array.isArray(body.tools)) return false;
  return body.tools.some(
    (tool: { function?: { name?: string } }) => tool.function?.name === 'browser_screenshot',
  );
}

describe('screenshots and uploads in the web UI', () => {
  let fixture: StackFixture;
  let key: string;
  let site: Server;
  let siteUrl: string;
  let browser: BrowserPage;
  let page: Page;
  // Every request the page made, with whether it carried the key in a header.
  const requests: { url: string; hasKey: boolean }[] = [];

  const api = async (method: string, path: string) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}` },
    });
    return response;
  };

  beforeAll(async () => {
    site = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(request.url === '/ferry' ? BUTTON_PAGE : PAGE);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/tides`;
    fixture = await startStackFixture({
      TOOL_TIMEOUT_MS: '30000',
      DOCUMENT_UPLOAD_MAX_BYTES: String(UPLOAD_MAX_BYTES),
    });
    key = (await fixture.createUser('sol')).apiKey;
    // Asked for a picture, the model calls browser_screenshot once, then answers. Asked to press
    // the button, it opens the page, clicks (which waits for approval), takes a screenshot of
    // the page it clicked on, then answers. Anything else it answers at once.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const messages = sentMessages(request);
      const asked = messages.findLast((message) => message.role === 'user')?.content ?? '';
      const results = messages.filter((message) => message.role === 'tool').length;
      if (asked.startsWith('Show me')) {
        if (messages.at(-1)?.role === 'tool') return { content: 'Here is the tide table.' };
        return { toolCalls: [{ name: 'browser_screenshot', arguments: { url: siteUrl } }] };
      }
      if (asked.startsWith('Press')) {
        const ferryUrl = new URL('/ferry', siteUrl).href;
        const steps = [
          { name: 'browser_open', arguments: { url: ferryUrl } },
          {
            name: 'browser_act',
            arguments: { action: 'click', role: 'button', name: 'Next ferry' },
          },
          { name: 'browser_screenshot', arguments: {} },
        ];
        const next = steps[results];
        return next ? { toolCalls: [next] } : { content: 'Pressed it.' };
      }
      return { content: 'Here.' };
    });
    browser = await openBrowserPage();
    page = browser.page;
    page.on('request', (request) => {
      const headers = request.headers();
      requests.push({ url: request.url(), hasKey: headers.authorization === `Bearer ${key}` });
    });
    await signIn(page, fixture.stack.gatewayUrl, key);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
    await new Promise((resolve) => site?.close(resolve));
  });

  it('shows the screenshot the agent took under its tool step in the chat', async () => {
    // The services start side by side: the orchestrator may have asked for the tools service's
    // list before that was up, and picks it up on its next turn.
    await waitFor(
      async () => {
        expect((await fixture.chat(key, { message: 'Are you there?' })).status).toBe(200);
        return offersScreenshot(fixture.fake.chatRequests().filter(isTurnRequest).at(-1)?.body);
      },
      { what: 'browser_screenshot to be offered', timeoutMs: 60_000, intervalMs: 500 },
    );
    await page.getByLabel('Message', { exact: true }).fill('Show me the tide table');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.getByRole('log', { name: 'Conversation' });
    await log.getByText('Here is the tide table.').waitFor({ timeout: 60_000 });

    const picture = log.getByRole('img', { name: 'Screenshot by browser_screenshot' });
    await picture.waitFor();
    // Loaded and decoded: a PNG of the size the tool reported, through a blob: URL.
    const shown = await page.evaluate(
      `(async () => { const img = document.querySelector('.chat-log .screenshot img');
        await img.decode();
        return { src: img.src, width: img.naturalWidth, height: img.naturalHeight }; })()`,
    );
    const { src, width, height } = shown as { src: string; width: number; height: number };
    expect(src).toMatch(/^blob:/);
    const caption = await log.locator('.screenshot figcaption').textContent();
    expect(caption).toContain(`${width}×${height}`);
    expect(width).toBeGreaterThan(100);

    // The PNG was asked for with the key in its header, never in a URL.
    const asked = requests.filter((request) => request.url.includes('/v1/screenshots/'));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((request) => request.hasKey)).toBe(true);
    expect(requests.some((request) => request.url.includes(key))).toBe(false);
    await browser.shoot('screenshot-in-chat');
  });

  it("shows it on the run's page too, as the step's output recorded it", async () => {
    await page.getByRole('link', { name: 'Run details' }).last().click();
    const steps = page.getByRole('list', { name: 'Steps' });
    await steps.waitFor();
    const picture = steps.getByRole('img', { name: 'Screenshot by browser_screenshot' });
    await picture.waitFor();

    const runId = new URL(page.url()).pathname.split('/').at(-1) ?? '';
    const { run } = RunsGetResponse.parse(await (await api('GET', `/v1/runs/${runId}`)).json());
    const step = run.steps.find((each) => each.name === 'browser_screenshot');
    const shot = ToolScreenshot.parse(step?.output.screenshot);
    expect(shot.path).toMatch(/^\/v1\/screenshots\/[0-9a-f-]{36}$/);
    const size = await page.evaluate(
      `(async () => { const img = document.querySelector('.steps .screenshot img');
        await img.decode();
        return [img.naturalWidth, img.naturalHeight]; })()`,
    );
    expect(size).toEqual([shot.width, shot.height]);

    // The same bytes the API answers, as a PNG that nothing may sniff or cache.
    const png = await api('GET', shot.path);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(png.headers.get('x-content-type-options')).toBe('nosniff');
    // Its own policy, not the page's: an image opened as a document can run nothing.
    expect(png.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(png.headers.get('cache-control')).toBe('private, no-store');
    expect(
      Buffer.from(await png.arrayBuffer())
        .subarray(1, 4)
        .toString('latin1'),
    ).toBe('PNG');
    await picture.scrollIntoViewIfNeeded();
    await browser.shoot('screenshot-in-run');
  });

  it('shows the screenshot taken after an approval, in the reply that follows it', async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/chat`);
    await page.getByLabel('Message', { exact: true }).fill('Press the ferry button');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.getByRole('log', { name: 'Conversation' });
    await log.getByRole('button', { name: 'Approve' }).click({ timeout: 60_000 });
    await log.getByText('Pressed it.').waitFor({ timeout: 60_000 });

    // That answer came as JSON, without tool events: the screenshot is read from the run.
    const reply = log.getByRole('article', { name: 'Jarvis said' }).last();
    const picture = reply.getByRole('img', { name: 'Screenshot by browser_screenshot' });
    await picture.waitFor();
    const size = await page.evaluate(
      `(async () => { const img = [...document.querySelectorAll('.chat-log .screenshot img')].at(-1);
        await img.decode();
        return img.naturalWidth; })()`,
    );
    expect(size).toBeGreaterThan(100);
    // Once: the reload left the earlier turn's tool steps out (the history holds messages).
    expect(await log.getByRole('img', { name: 'Screenshot by browser_screenshot' }).count()).toBe(
      1,
    );
    await picture.scrollIntoViewIfNeeded();
    await browser.shoot('screenshot-after-approval');
  });

  it('uploads a PDF from the Documents panel, with its pages and chunks', async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/memory/documents`);
    const form = page.getByRole('form', { name: 'Upload a document' });
    await form.waitFor();
    const pdf = await makePdf({ pages: ['Boats moor on the east quay.', 'No swimming.'] });
    await form.getByLabel(/^File/).setInputFiles({
      name: 'harbour.pdf',
      mimeType: 'application/pdf',
      buffer: Buffer.from(pdf),
    });
    await form.getByLabel('Title (optional)').fill(DOCUMENT_TITLE);
    await form.getByRole('button', { name: 'Upload' }).click();

    const added = form.locator('output.notice-ok');
    await added.waitFor({ timeout: 60_000 });
    expect(await added.textContent()).toMatch(
      new RegExp(`^Added “${DOCUMENT_TITLE}”: 2 pages, \\d+ chunks?\\.$`),
    );
    const list = page.getByRole('list', { name: 'Documents' });
    await list.getByText(DOCUMENT_TITLE).waitFor();
    expect(await list.getByRole('listitem').count()).toBe(1);
    // The form is ready for the next file.
    expect(await form.getByLabel('Title (optional)').inputValue()).toBe('');
    await browser.shoot('documents-uploaded');
  });

  it("shows a refused upload in the server's words, and adds nothing", async () => {
    const form = page.getByRole('form', { name: 'Upload a document' });
    await form.getByLabel(/^File/).setInputFiles({
      name: 'locked.pdf',
      mimeType: 'application/pdf',
      buffer: Buffer.from(await encryptedPdf()),
    });
    await form.getByRole('button', { name: 'Upload' }).click();
    const alert = form.getByRole('alert');
    await alert.waitFor({ timeout: 60_000 });
    expect(await alert.textContent()).toMatch(/password|encrypt/i);
    expect(await page.getByRole('list', { name: 'Documents' }).getByRole('listitem').count()).toBe(
      1,
    );
    const listed = (await (await api('GET', '/v1/memory/documents')).json()) as {
      documents: unknown[];
    };
    expect(listed.documents).toHaveLength(1);
  });

  it('shows a file past the size limit refused as too large, not as a broken connection', async () => {
    const form = page.getByRole('form', { name: 'Upload a document' });
    await form.getByLabel(/^File/).setInputFiles({
      name: 'big.txt',
      mimeType: 'text/plain',
      buffer: Buffer.alloc(UPLOAD_MAX_BYTES + 1, 'a'),
    });
    await form.getByRole('button', { name: 'Upload' }).click();
    const alert = form.getByRole('alert');
    await expect.poll(() => alert.textContent(), { timeout: 30_000 }).toMatch(/limit|large/i);
    expect(await alert.textContent()).not.toContain('cannot be reached');
    // The form is usable again.
    expect(await form.getByRole('button', { name: 'Upload' }).isEnabled()).toBe(true);
    const listed = (await (await api('GET', '/v1/memory/documents')).json()) as {
      documents: unknown[];
    };
    expect(listed.documents).toHaveLength(1);
  });

  it('fits a phone screen, and broke nothing on the page', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${fixture.stack.gatewayUrl}/chat`);
    await page.getByRole('log', { name: 'Conversation' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).toBe(
      false,
    );
    // A CSP violation (an image the policy refused) or a script error would be here; the
    // refused upload's 400 is a failed resource load, which is expected.
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
