import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE } from './browser';

// Markdown replies in Debian's Chromium against the whole stack: the scripted model answers with
// hostile Markdown (each payload would set window.__pwned or open a dialog if it ever ran) and
// with the Markdown models really write (a wide table, a code block). Nothing runs, the page's
// policy reports no violation, a remote image is a link, and the code block copies. The page's
// own code is evaluated in the browser as text, as this package has no DOM types.
const HOSTILE = [
  'Some things that must stay inert:',
  '',
  '<script>window.__pwned = "script"; alert("script")</script>',
  '',
  '<img src="/nothing.png" onerror="window.__pwned = \'onerror\'; alert(\'onerror\')">',
  '',
  '<svg onload="window.__pwned = \'svg\'"><script>window.__pwned = "svg script"</script></svg>',
  '',
  "A [javascript link](javascript:window.__pwned='link';alert(1)) and an",
  "[encoded one](javascript&#58;window.__pwned='entity') and a",
  '[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) and a',
  '[data SVG](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+).',
  '',
  '![an SVG with a script](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+)',
  '',
  '![tracking pixel](https://tracker.example/pixel.png?who=you)',
  '',
  '![our icon](/favicon.svg)',
  '',
  'And a [real link](https://example.com/docs "Docs").',
].join('\n');
const CODE = 'def greet(name):\n    return f"Hello, {name}!"\n\nprint(greet("Ada"))';
const RICH = [
  '## Tool calls this week',
  '',
  '| Tool | Calls | Mean time | Longest argument seen in any call this week |',
  '|:-----|------:|:---------:|:--------------------------------------------|',
  '| web_fetch | 120 | 340 ms | https://example.com/a/rather/long/path/that/does/not/wrap |',
  '| memory_search | 48 | 12 ms | "what did I say about the ferry timetable last spring" |',
  '',
  'The function:',
  '',
  `\`\`\`python\n${CODE}\n\`\`\``,
  '',
  '- one **bold** point',
  '- and `inline code`',
].join('\n');

describe('Markdown replies in the web UI', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  const urls: string[] = [];
  const dialogs: string[] = [];

  const reply = () => page.getByRole('article', { name: 'Jarvis said' }).last();
  const pwned = () => page.evaluate('window.__pwned');

  async function ask(text: string) {
    await page.getByLabel('Message', { exact: true }).fill(text);
    await expect.poll(() => page.getByRole('button', { name: 'Send' }).isEnabled()).toBe(true);
    await page.getByRole('button', { name: 'Send' }).click();
  }

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('grace')).apiKey;
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const asked = sentMessages(request).findLast((message) => message.role === 'user');
      return { content: asked?.content.startsWith('Hostile') ? HOSTILE : RICH };
    });
    browser = await openBrowserPage();
    page = browser.page;
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: fixture.stack.gatewayUrl,
    });
    page.on('request', (request) => urls.push(request.url()));
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${fixture.stack.gatewayUrl}/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Message', { exact: true }).waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('runs nothing from a hostile reply, under the same strict policy', async () => {
    await ask('Hostile Markdown, please');
    const answer = reply();
    await answer.getByRole('link', { name: 'real link' }).waitFor({ timeout: 60_000 });
    // Give anything that would run (an image's onerror, an SVG's onload) time to.
    await page.waitForTimeout(500);

    expect(await pwned()).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(browser.unexpectedProblems()).toEqual([]);
    const policy = (await page.request.get(`${fixture.stack.gatewayUrl}/`)).headers()[
      'content-security-policy'
    ];
    expect(policy?.split(';').filter((directive) => directive.includes('unsafe-'))).toEqual([]);
    expect(policy).toContain("img-src 'self' blob:");

    // Raw HTML is shown as text, never made into elements.
    const markdown = answer.locator('.markdown');
    expect(await markdown.textContent()).toContain('<script>window.__pwned = "script"');
    expect(await markdown.locator('script, svg, iframe, object, embed, style').count()).toBe(0);
    const handlers = await page.evaluate(
      `[...document.querySelectorAll('.markdown *')].flatMap((element) =>
        [...element.attributes].map((attribute) => attribute.name))
        .filter((name) => name.startsWith('on') || name === 'style')`,
    );
    expect(handlers).toEqual([]);

    // Only http(s) links, each in a new tab without opener or referrer.
    const links = (await page.evaluate(
      `[...[...document.querySelectorAll('.msg-assistant')].at(-1).querySelectorAll('.markdown a')]
        .map((a) =>
        ({ href: a.getAttribute('href'), target: a.target, rel: a.rel, text: a.textContent }))`,
    )) as { href: string; target: string; rel: string; text: string }[];
    expect(links.map((link) => link.href)).toEqual([
      'https://tracker.example/pixel.png?who=you',
      'https://example.com/docs',
    ]);
    for (const link of links) {
      expect(link.target).toBe('_blank');
      expect(link.rel).toBe('noopener noreferrer');
    }
    // The refused links keep their words as text.
    expect(await markdown.textContent()).toContain('[javascript link](javascript:');

    // The remote image is a link to it and was never fetched; the install's own icon shows.
    expect(links[0]?.text).toBe('tracking pixel');
    expect(urls.filter((url) => url.includes('tracker.example'))).toEqual([]);
    const icon = markdown.getByRole('img', { name: 'our icon' });
    expect(await icon.count()).toBe(1);
    await expect
      .poll(() => page.evaluate(`document.querySelector('.markdown img').naturalWidth`))
      .toBeGreaterThan(0);
    expect(await markdown.locator('img').count()).toBe(1);
    await page.evaluate(`[...document.querySelectorAll('.msg-assistant')].at(-1).scrollIntoView()`);
    await browser.shoot('markdown-hostile-desktop');
  });

  it('renders a table in a scrolling box and a highlighted code block that copies', async () => {
    await ask('Show me the week in a table');
    const answer = reply();
    await answer.getByRole('button', { name: 'Copy' }).waitFor({ timeout: 60_000 });
    // By its class: its name changes as it is used.
    const copy = answer.locator('.code-copy');

    expect(await answer.getByRole('heading', { name: 'Tool calls this week' }).count()).toBe(1);
    const table = answer.locator('.table-scroll > table');
    expect(await table.getByRole('row').count()).toBe(3);
    expect(await answer.locator('td.align-right').first().textContent()).toBe('120');
    expect(await answer.locator('.code-lang').textContent()).toBe('python');
    expect(await answer.locator('pre code .hljs-keyword').first().textContent()).toBe('def');
    expect(await answer.locator('li strong').textContent()).toBe('bold');

    await copy.click();
    await expect.poll(() => copy.textContent()).toBe('Copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(CODE);
    // The label comes back for the next copy.
    await expect.poll(() => copy.textContent(), { timeout: 5_000 }).toBe('Copy');
    expect(browser.unexpectedProblems()).toEqual([]);
    await reply().scrollIntoViewIfNeeded();
    await browser.shoot('markdown-desktop');
  });

  it('fits a phone: the table scrolls in its box, not the page', async () => {
    await page.setViewportSize(PHONE);
    const box = reply().locator('.table-scroll');
    await box.scrollIntoViewIfNeeded();
    const isWiderThanScreen = () =>
      page.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    expect(await isWiderThanScreen()).toBe(false);
    const scrolls = `[...document.querySelectorAll('.table-scroll')].at(-1)`;
    expect(await page.evaluate(`${scrolls}.scrollWidth > ${scrolls}.clientWidth`)).toBe(true);
    await browser.shoot('markdown-phone');
  });

  it('renders the replies again from the history after a reload, in the dark scheme too', async () => {
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.reload();
    await reply().getByRole('button', { name: 'Copy' }).waitFor({ timeout: 30_000 });
    expect(await page.locator('.markdown .table-scroll').count()).toBe(1);
    expect(await pwned()).toBeUndefined();
    expect(dialogs).toEqual([]);
    // The dark palette's keyword colour, from the stylesheet (no inline style anywhere).
    const colour = await page.evaluate(
      `getComputedStyle([...document.querySelectorAll('.hljs-keyword')].at(-1)).color`,
    );
    expect(colour).toBe('rgb(255, 123, 114)');
    expect(browser.unexpectedProblems()).toEqual([]);
    await reply().scrollIntoViewIfNeeded();
    await browser.shoot('markdown-phone-dark');
  });
});
