import { ChatResponse, MemoryMessagesListResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, startStackFixture } from '@jarvis/testkit';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// Search in the conversation, in Debian's Chromium (./browser.ts) against the whole stack: a long
// conversation (imported, as a user moving from another assistant would), a search for a message
// far older than the chat's first page, and the jump to it in its context.
const EARLIER = 150;
// The found message's place among the imported ones: 90 newer than it, so the chat's first page
// (50 messages) does not hold it, and 60 older, so its context has earlier pages too.
const FOUND_INDEX = 60;
const FOUND = 'Remember that the spare key is under the blue flowerpot by the shed.';

function filler(index: number): string {
  return index % 2 === 0
    ? `Note ${index}: the weather today was mild and the train ran on time.`
    : `Reply ${index}: thanks, I have written that down with the other notes.`;
}

describe('search in the conversation', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;

  const shoot = (name: string) => browser.shoot(name);
  const context = (): Locator => page.getByRole('dialog', { name: 'In the conversation' });
  const found = (): Locator => context().locator('[aria-current="true"]');

  // Whether the element is wholly inside the dialog's scrolled view: the jump scrolled to it.
  async function isInView(element: Locator): Promise<boolean> {
    const box = await element.boundingBox();
    const view = await context().locator('.message-context-log').boundingBox();
    if (!box || !view) return false;
    return box.y >= view.y && box.y + box.height <= view.y + view.height;
  }

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('search')).apiKey;
    fixture.fake.onChat((request) =>
      isTurnRequest(request) ? { content: 'Noted.' } : { content: '{"operations": []}' },
    );
    // The first message makes the persistent conversation the chat shows; the import fills it.
    const first = ChatResponse.parse(await (await fixture.chat(key, { message: 'Hello' })).json());
    const start = Date.now() - 2 * 24 * 3_600_000;
    const messages = Array.from({ length: EARLIER }, (_, index) => ({
      role: index % 2 === 0 ? 'user' : 'assistant',
      content: index === FOUND_INDEX ? FOUND : filler(index),
      createdAt: new Date(start + index * 60_000).toISOString(),
    }));
    const imported = await fetch(
      `${fixture.stack.gatewayUrl}/v1/conversations/${first.conversationId}/messages/import`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ messages }),
      },
    );
    expect(imported.status).toBe(200);

    browser = await openBrowserPage({ locale: 'en-GB' });
    page = browser.page;
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('finds a message the chat has not loaded, with its snippet and date', async () => {
    await signIn(page, fixture.stack.gatewayUrl, key);
    const log = page.getByRole('log', { name: 'Conversation' });
    await log.getByText(filler(EARLIER - 1)).waitFor();
    expect(await log.getByText(FOUND).count()).toBe(0);

    await page.getByRole('searchbox', { name: 'Search the conversation' }).fill('blue flowerpot');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hits = page.getByRole('list', { name: 'Messages found' }).getByRole('button');
    await hits.first().waitFor({ timeout: 30_000 });
    const hit = hits.filter({ hasText: 'flowerpot' }).first();
    expect(await hit.locator('mark').textContent()).toBe('blue');
    expect(await hit.textContent()).toContain(FOUND);
    // The date as the locale writes it (en-GB, medium: "27 Nov 2026").
    expect(await hit.locator('.muted').textContent()).toMatch(/^\d{1,2} \w{3} \d{4}, \d{2}:\d{2}$/);
    await shoot('conversation-search-results-desktop');
  });

  it('jumps to it in its context: the messages around it, scrolled to it and highlighted', async () => {
    const answer = page.waitForResponse((response) => response.url().includes('around='));
    await page
      .getByRole('list', { name: 'Messages found' })
      .getByRole('button')
      .filter({ hasText: 'flowerpot' })
      .first()
      .click();
    expect((await answer).status()).toBe(200);
    await found().waitFor();

    expect(await found().textContent()).toContain(FOUND);
    expect(await found().getAttribute('class')).toContain('msg-found');
    const outline = await page.evaluate(
      'getComputedStyle(document.querySelector(".msg-found")).outlineStyle',
    );
    expect(outline).toBe('solid');
    await expect.poll(() => isInView(found())).toBe(true);
    // Its neighbours on both sides, in order.
    const texts = (await context().locator('article .msg-text').allTextContents()).map((text) =>
      text.trim(),
    );
    const at = texts.findIndex((text) => text.includes('flowerpot'));
    expect(texts[at - 1]).toBe(filler(FOUND_INDEX - 1));
    expect(texts[at + 1]).toBe(filler(FOUND_INDEX + 1));
    expect(await page.evaluate('document.activeElement?.getAttribute("aria-current")')).toBe(
      'true',
    );
    await shoot('conversation-search-context-desktop');
  });

  it('pages back to earlier messages without losing its place, and closes back to the chat', async () => {
    // Scrolled up to the button, as the user would be, the oldest message shown so far in view.
    await page.evaluate('document.querySelector(".message-context-log").scrollTop = 0');
    const before = await context().locator('article').count();
    const oldest = context().getByText(filler(FOUND_INDEX - 15), { exact: true });
    const oldestAt = (await oldest.boundingBox())?.y;
    await context().getByRole('button', { name: 'Load earlier messages' }).click();
    await expect.poll(() => context().locator('article').count()).toBeGreaterThan(before);
    // The page came in above it: what the user was reading did not move.
    expect(Math.abs(((await oldest.boundingBox())?.y ?? 0) - (oldestAt ?? -99))).toBeLessThan(2);
    const first = context().locator('article .msg-text').first();
    expect((await first.textContent())?.trim()).toBe(filler(FOUND_INDEX - 15 - 30));

    await page.keyboard.press('Escape');
    await expect.poll(() => context().count()).toBe(0);
    await page.getByLabel('Message', { exact: true }).waitFor();
    expect(browser.unexpectedProblems()).toEqual([]);
  });

  it('works at phone size', async () => {
    // Whatever the test before left open.
    if ((await context().count()) > 0) await page.keyboard.press('Escape');
    await page.setViewportSize(PHONE);
    await page.getByRole('searchbox', { name: 'Search the conversation' }).fill('spare key');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hit = page
      .getByRole('list', { name: 'Messages found' })
      .getByRole('button')
      .filter({ hasText: 'flowerpot' })
      .first();
    await hit.waitFor({ timeout: 30_000 });
    await shoot('conversation-search-results-phone');
    await hit.click();
    await found().waitFor();
    await expect.poll(() => isInView(found())).toBe(true);
    await shoot('conversation-search-context-phone');
    // The highlight and the dates in a bubble stay readable in the dark scheme too.
    await page.emulateMedia({ colorScheme: 'dark' });
    await shoot('conversation-search-context-phone-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await context().getByRole('button', { name: 'Close' }).click();
    await expect.poll(() => context().count()).toBe(0);
    expect(browser.unexpectedProblems()).toEqual([]);
  });

  it('answers the page around a message through the API, newest first', async () => {
    const api = (path: string) =>
      fetch(`${fixture.stack.gatewayUrl}${path}`, {
        headers: { authorization: `Bearer ${key}` },
      });
    const list = (await (await api('/v1/conversations?limit=1')).json()) as {
      defaultConversationId: string;
    };
    const path = `/v1/conversations/${list.defaultConversationId}/messages`;
    const latest = MemoryMessagesListResponse.parse(await (await api(`${path}?limit=200`)).json());
    const target = latest.messages.find((message) => message.content === FOUND);
    expect(target).toBeDefined();
    const around = MemoryMessagesListResponse.parse(
      await (await api(`${path}?limit=5&around=${target?.id}`)).json(),
    );
    expect(around.messages.map((message) => message.content)).toEqual([
      filler(FOUND_INDEX + 2),
      filler(FOUND_INDEX + 1),
      FOUND,
      filler(FOUND_INDEX - 1),
      filler(FOUND_INDEX - 2),
    ]);
  });
});
