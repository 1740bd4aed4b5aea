import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE } from './browser';

// The web UI in Debian's Chromium (./browser.ts), against the whole stack: the gateway serves
// the build that turbo makes before this test (turbo.json: @jarvis/e2e#test needs
// @jarvis/web-ui#build).
const REPLY = 'Your favourite colour is <b>purple</b>.';
const NOTE = 'notes/old-plans.md';

describe('the web UI in a browser', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  // Every URL the page asked for.
  const urls: string[] = [];

  const shoot = (name: string) => browser.shoot(name);
  // The page's own code is evaluated in the browser: written as text, as this package has no DOM
  // types.
  const storedKey = () => page.evaluate("localStorage.getItem('jarvis.apiKey')");
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('ada')).apiKey;
    // Asked to delete a note, the model calls memory_delete (a risky tool: it waits for
    // approval). Otherwise it looks in memory once, then answers with markup that must stay text.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const messages = sentMessages(request);
      const toolResult = messages.findLast((message) => message.role === 'tool');
      const asked = messages.findLast((message) => message.role === 'user')?.content ?? '';
      if (asked.startsWith('Delete ')) {
        if (!toolResult) {
          return { toolCalls: [{ name: 'memory_delete', arguments: { path: NOTE } }] };
        }
        return { content: toolResult.content.includes('denied') ? 'OK, I left it.' : 'Deleted.' };
      }
      if (toolResult) return { content: REPLY };
      return { toolCalls: [{ name: 'memory_search', arguments: { query: 'favourite colour' } }] };
    });
    const fact = {
      content: 'Favourite colour is purple',
      category: 'preference',
      importance: 7,
      tags: ['colours'],
    };
    expect((await api('POST', '/v1/memory/facts', fact)).status).toBe(201);

    browser = await openBrowserPage();
    page = browser.page;
    page.on('request', (request) => urls.push(request.url()));
    page.on('dialog', (dialog) => void dialog.accept());
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('signs in with a key, under a strict same-origin content security policy', async () => {
    const response = await page.goto(`${fixture.stack.gatewayUrl}/`);
    expect(response?.status()).toBe(200);
    const policy = (response?.headers()['content-security-policy'] ?? '').split(';');
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("style-src 'self'");
    expect(policy.filter((directive) => directive.includes('unsafe-inline'))).toEqual([]);
    await shoot('login-desktop');

    await page.getByLabel('API key').fill('jv_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not accepted/);

    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Message', { exact: true }).waitFor();
    expect(await storedKey()).toBe(key);
    await expect.poll(() => page.locator('.status-text').textContent()).toBe('online');
    // /metrics is for Prometheus on the compose network: Traefik does not route it, so a page
    // asking for it would get a 404 in every real deployment.
    expect(urls.filter((url) => new URL(url).pathname === '/metrics')).toEqual([]);
  });

  // Enter sends only once the conversation's history has loaded, as the Send button shows; a
  // press before that is ignored (the text stays in the box), which under load made this flaky.
  async function typeAndPressEnter(text: string) {
    await page.getByLabel('Message', { exact: true }).fill(text);
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
    await page.keyboard.press('Enter');
  }

  it('streams the reply to a message as text, with its tool steps', async () => {
    const chatResponse = page.waitForResponse((response) => response.url().endsWith('/v1/chat'));
    await typeAndPressEnter('What is my favourite colour?');
    const isStreamed = ((await chatResponse).headers()['content-type'] ?? '').includes(
      'event-stream',
    );

    const reply = page.locator('.msg-assistant').last().locator('.msg-text');
    await expect.poll(() => reply.textContent(), { timeout: 30_000 }).toBe(REPLY);
    // Markup in a reply is shown, never rendered.
    expect(await page.locator('.msg-assistant b').count()).toBe(0);
    expect(await page.locator('.msg-user').last().textContent()).toBe(
      'What is my favourite colour?',
    );
    // Streamed: the tool step was shown as it ran, with its arguments, outcome and duration.
    expect(isStreamed).toBe(true);
    const step = page.locator('.tool-step').first();
    expect(await step.locator('.tool-name').textContent()).toBe('memory_search');
    expect(await step.textContent()).toContain('query: "favourite colour"');
    expect(await step.locator('.badge').textContent()).toBe('ok');
    expect(await step.textContent()).toMatch(/\d+ ms/);
    await page.getByRole('link', { name: 'Run details' }).last().waitFor();
    await shoot('chat-desktop');
  });

  it('asks before a risky tool call, inline, and goes on once approved', async () => {
    const note = { path: NOTE, content: 'Lisbon, maybe' };
    expect((await api('PUT', '/v1/memory/files/content', note)).status).toBe(200);
    await typeAndPressEnter(`Delete ${NOTE}`);

    const approval = page.locator('.approval').last();
    await approval.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 30_000 });
    expect(await approval.locator('legend').textContent()).toBe(
      'Jarvis wants to run memory_delete',
    );
    expect(await approval.textContent()).toContain(`path: "${NOTE}"`);
    await shoot('approval-desktop');

    await approval.getByRole('button', { name: 'Approve' }).click();
    const reply = page.locator('.msg-assistant').last().locator('.msg-text');
    await expect.poll(() => reply.textContent(), { timeout: 30_000 }).toBe('Deleted.');
    expect(await approval.textContent()).toContain('approved');
    const read = await api('GET', `/v1/memory/files/content?path=${encodeURIComponent(NOTE)}`);
    expect(read.status).toBe(404);
  });

  it('edits a fact in the memory browser, keeping the old version in its history', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Memory' })
      .click();
    const facts = page.getByRole('list', { name: 'Facts' });
    const purple = facts.getByRole('listitem').filter({ hasText: 'Favourite colour is purple' });
    await purple.getByRole('button', { name: 'Edit' }).click();
    const form = facts.getByRole('form', { name: 'Edit fact' });
    await form.getByLabel('Fact', { exact: true }).fill('Favourite colour is green');
    await form.getByRole('button', { name: 'Save' }).click();

    const green = facts.getByRole('listitem').filter({ hasText: 'Favourite colour is green' });
    await green.waitFor();
    expect(await facts.getByText('Favourite colour is purple').count()).toBe(0);
    const listed = (await (await api('GET', '/v1/memory/facts')).json()) as {
      facts: { content: string; category: string; tags: string[] }[];
    };
    expect(listed.facts).toEqual([
      expect.objectContaining({
        content: 'Favourite colour is green',
        category: 'preference',
        tags: ['colours'],
      }),
    ]);

    await green.getByRole('button', { name: 'History' }).click();
    await green.getByText('Favourite colour is purple').waitFor();
    await shoot('memory-desktop');

    // A reload on a client route gets the app again, still signed in.
    await page.reload();
    await page
      .getByRole('list', { name: 'Facts' })
      .getByText('Favourite colour is green')
      .waitFor();
  });

  it('shows the run of that message with its steps and trace id', async () => {
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Runs' })
      .click();
    // Newest first: the colour question is the oldest run.
    await page.getByRole('list', { name: 'Runs' }).getByRole('link').last().click();
    const steps = page.getByRole('list', { name: 'Steps' });
    await steps.getByText('memory_search', { exact: true }).waitFor();
    expect(await page.locator('.trace code').textContent()).toMatch(/^[0-9a-f]{32}$/);
    await shoot('run-desktop');
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize(PHONE);
    const sections = page.getByRole('navigation', { name: 'Sections' });
    await sections.getByRole('link', { name: 'Chat' }).click();
    await page.getByLabel('Message', { exact: true }).fill('And on a phone?');
    await page.getByRole('button', { name: 'Send' }).click();
    // The earlier exchange is back after the reload, from the history API.
    await page.getByText('What is my favourite colour?').waitFor();
    const reply = page.locator('.msg-assistant').last().locator('.msg-text');
    await expect.poll(() => reply.textContent(), { timeout: 30_000 }).toBe(REPLY);
    const isWiderThanScreen = () =>
      page.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    expect(await isWiderThanScreen()).toBe(false);
    await shoot('chat-phone');

    await sections.getByRole('link', { name: 'Memory' }).click();
    await page.getByText('Favourite colour is green').waitFor();
    expect(await isWiderThanScreen()).toBe(false);
    await shoot('memory-phone');
  });

  it('forgets the key, and never put it in a URL or broke the page', async () => {
    await page.getByRole('button', { name: 'Forget key' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await storedKey()).toBeNull();

    expect(urls.filter((url) => url.includes(key))).toEqual([]);
    // CSP violations ("Refused to …") and script errors; answers such as the wrong key's 401
    // are logged as failed loads, and are not the page's fault.
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
