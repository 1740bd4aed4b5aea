import { readFile } from 'node:fs/promises';
import { MissionResponse } from '@jarvis/contracts';
import { type StackFixture, startStackFixture } from '@jarvis/testkit';
import type { Download, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';
import { onTurn, waitForToolsOffered } from './tool-turns';

// The workspace in the web UI, in Debian's Chromium against the whole stack with a real
// bubblewrap box: the chat's files panel uploads, lists, downloads (fetched with the key, saved
// from a blob) and deletes a file; the files run_code writes show under its step, the PNG as a
// picture and the SVG only as a download, in the chat and on the run's page; a mission's page
// has its own workspace's panel.

// Python with no libraries: a 40×30 PNG drawn by hand, an SVG holding a script, and a CSV.
const DRAW = String.raw`import os, struct, zlib
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
rows = b''.join(b'\x00' + bytes([30, 120, 200]) * 40 for _ in range(30))
png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 40, 30, 8, 2, 0, 0, 0))
       + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))
os.makedirs('/workspace/charts', exist_ok=True)
open('/workspace/charts/tide.png', 'wb').write(png)
open('/workspace/picture.svg', 'w').write('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
open('/workspace/tides.csv', 'w').write('time,height\n14:05,3.1\n')
print('drawn')`;
const NOTES = 'High tide at 14:05.\n';
// The file limit, small here so that a file past it is quick to send.
const FILE_MAX_MB = 1;

describe('workspace files in the web UI', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  // Every request the page made, with whether it carried the key in a header.
  const requests: { url: string; hasKey: boolean }[] = [];

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };
  const listed = async (kind: 'conversation' | 'mission', id: string) => {
    const { status, body } = await api('GET', `/v1/workspaces/${kind}/${id}/files`);
    expect(status).toBe(200);
    return (body as { files: { path: string; size: number }[] }).files;
  };
  const conversationId = async () => {
    const { body } = await api('GET', '/v1/conversations?limit=1');
    return (body as { defaultConversationId: string }).defaultConversationId;
  };
  const contentOf = async (download: Download) => readFile((await download.path()) ?? '', 'utf8');

  beforeAll(async () => {
    fixture = await startStackFixture({ WORKSPACE_FILE_MAX_MB: String(FILE_MAX_MB) });
    key = (await fixture.createUser('nell')).apiKey;
    // Also makes the conversation whose workspace the chat's panel shows.
    await waitForToolsOffered(fixture, key, ['run_code']);
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
  });

  it("uploads, lists, downloads and deletes a file in the chat's files panel", async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/chat`);
    const panel = page.locator('.chat > details.workspace');
    await panel.getByText('Files', { exact: true }).click();
    await panel.getByText(/^No files yet/).waitFor();
    expect(await panel.getByText(/used, across all your workspaces/).textContent()).toMatch(
      /^0 B of 500\.0 MB/,
    );

    const form = panel.getByRole('form', { name: 'Upload to the workspace' });
    await form.getByLabel('Add a file').setInputFiles({
      name: 'notes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(NOTES),
    });
    await form.getByRole('button', { name: 'Upload' }).click();
    const files = panel.getByRole('list', { name: 'Workspace files' });
    await files.getByText('notes.txt').waitFor();
    expect(await files.getByRole('listitem').textContent()).toContain(`${NOTES.length} B`);
    const id = await conversationId();
    expect(await listed('conversation', id)).toMatchObject([
      { path: 'notes.txt', size: NOTES.length },
    ]);

    // Fetched with the key, saved under the file's name with the very bytes.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      files.getByRole('button', { name: 'Download notes.txt' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('notes.txt');
    expect(await contentOf(download)).toBe(NOTES);
    await browser.shoot('workspace-panel-chat');

    page.once('dialog', (dialog) => void dialog.accept());
    await files.getByRole('button', { name: 'Delete notes.txt' }).click();
    await panel.getByText(/^No files yet/).waitFor();
    expect(await listed('conversation', id)).toEqual([]);

    const asked = requests.filter((request) => request.url.includes('/v1/workspaces/'));
    expect(asked.length).toBeGreaterThanOrEqual(4);
    expect(asked.every((request) => request.hasKey)).toBe(true);
    expect(requests.some((request) => request.url.includes(key))).toBe(false);
  });

  it('shows a file past the size limit refused as too large, and keeps nothing', async () => {
    const panel = page.locator('.chat > details.workspace');
    const form = panel.getByRole('form', { name: 'Upload to the workspace' });
    await form.getByLabel('Add a file').setInputFiles({
      name: 'big.bin',
      mimeType: 'application/octet-stream',
      buffer: Buffer.alloc(FILE_MAX_MB * 1_048_576 + 1, 'a'),
    });
    await form.getByRole('button', { name: 'Upload' }).click();
    const alert = form.getByRole('alert');
    await expect.poll(() => alert.textContent(), { timeout: 30_000 }).toMatch(/limit|large/i);
    expect(await alert.textContent()).not.toContain('cannot be reached');
    expect(await form.getByRole('button', { name: 'Upload' }).isEnabled()).toBe(true);
    expect(await listed('conversation', await conversationId())).toEqual([]);
  });

  it('shows the PNG run_code drew under its step, and the SVG and CSV only as downloads', async () => {
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'run_code', arguments: { language: 'python', code: DRAW } }] }
        : { content: 'Drew the tide chart.' },
    );
    await page.getByLabel('Message', { exact: true }).fill('Draw the tide chart');
    await page.getByRole('button', { name: 'Send' }).click();
    const log = page.getByRole('log', { name: 'Conversation' });
    await log.getByText('Drew the tide chart.').waitFor({ timeout: 90_000 });

    const picture = log.getByRole('img', { name: 'charts/tide.png' });
    await picture.waitFor();
    const shown = await page.evaluate(
      `(async () => { const img = document.querySelector('.chat-log .workspace-image img');
        await img.decode();
        return { src: img.src, width: img.naturalWidth, height: img.naturalHeight }; })()`,
    );
    expect(shown).toEqual({ src: expect.stringMatching(/^blob:/), width: 40, height: 30 });
    // Never a picture, though an SVG is an image: it could run script in this origin.
    expect(await log.getByRole('img', { name: 'picture.svg' }).count()).toBe(0);
    expect(await page.locator('.chat-log img').count()).toBe(1);
    const others = log.getByRole('list', { name: 'Files from run_code' });
    await others.getByRole('button', { name: 'Download picture.svg' }).waitFor();
    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      others.getByRole('button', { name: 'Download tides.csv' }).click(),
    ]);
    expect(csv.suggestedFilename()).toBe('tides.csv');
    expect(await contentOf(csv)).toBe('time,height\n14:05,3.1\n');

    // The open panel read the workspace again when the files arrived.
    const files = page
      .locator('.chat > details.workspace')
      .getByRole('list', { name: 'Workspace files' });
    await files.getByText('charts/tide.png').waitFor();
    expect(await files.getByRole('listitem').count()).toBe(3);
    await picture.scrollIntoViewIfNeeded();
    await browser.shoot('workspace-files-in-chat');
  });

  it("shows the PNG on the run's page too, as the step's output recorded it", async () => {
    await page.getByRole('link', { name: 'Run details' }).last().click();
    const steps = page.getByRole('list', { name: 'Steps' });
    await steps.waitFor();
    await steps.getByRole('img', { name: 'charts/tide.png' }).waitFor();
    const width = await page.evaluate(
      `(async () => { const img = document.querySelector('.steps .workspace-image img');
        await img.decode();
        return img.naturalWidth; })()`,
    );
    expect(width).toBe(40);
    expect(await steps.getByRole('img', { name: 'picture.svg' }).count()).toBe(0);
    await steps.getByRole('button', { name: 'Download picture.svg' }).waitFor();
    await browser.shoot('workspace-files-in-run');
  });

  it("has a panel for a mission's own workspace on its page", async () => {
    onTurn(fixture, () => ({ content: 'done' }));
    const created = await api('POST', '/v1/missions', {
      objective: 'Chart the tides',
      tasks: [{ title: 'Read the tides', brief: 'Read the tide table.' }],
    });
    expect(created.status).toBe(202);
    const { mission } = MissionResponse.parse(created.body);
    await page.goto(`${fixture.stack.gatewayUrl}/missions/${mission.id}`);
    const panel = page.locator('details.workspace');
    await panel.getByText(/^No files yet/).waitFor();
    const form = panel.getByRole('form', { name: 'Upload to the workspace' });
    await form.getByLabel('Add a file').setInputFiles({
      name: 'brief.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(NOTES),
    });
    await form.getByRole('button', { name: 'Upload' }).click();
    await panel.getByRole('list', { name: 'Workspace files' }).getByText('brief.txt').waitFor();
    expect(await listed('mission', mission.id)).toMatchObject([{ path: 'brief.txt' }]);
    // The conversation's workspace is another.
    expect(
      (await listed('conversation', await conversationId())).map((file) => file.path),
    ).not.toContain('brief.txt');
  });

  it('fits a phone screen, and broke nothing on the page', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${fixture.stack.gatewayUrl}/chat`);
    await page.locator('.chat > details.workspace').getByText('Files', { exact: true }).click();
    await page.getByRole('list', { name: 'Workspace files' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).toBe(
      false,
    );
    await browser.shoot('workspace-panel-phone');
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
