import { createECDH, randomBytes } from 'node:crypto';
import { isTurnRequest, type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// The Settings page's parts beyond the channels (./web-ui-settings.test.ts): the part links,
// time zone and quiet hours kept across a reload, an API key created then revoked, usage against
// a budget, push devices, and the colour scheme (the system's, or the one chosen, kept in this
// browser). Against the whole stack in Debian's Chromium (./browser.ts).
const DAILY_TOKENS = 50_000;
const TURN_USAGE = { inputTokens: 1_200, outputTokens: 34 };
const ZONE = 'America/Sao_Paulo';
// The two palettes' page background (styles.css, --bg).
const LIGHT_BG = 'rgb(246, 247, 249)';
const DARK_BG = 'rgb(17, 20, 24)';

describe('the Settings page, every part', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;

  const api = async (method: string, path: string, body?: unknown, apiKey = key) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      body: response.status === 204 ? {} : ((await response.json()) as Record<string, unknown>),
    };
  };
  const region = (name: string) => page.getByRole('region', { name, exact: true });
  // Strings, not functions: e2e's TypeScript has no DOM types.
  const background = () =>
    page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
  const dataTheme = () =>
    page.evaluate<string | null>('document.documentElement.dataset.theme ?? null');
  const openSettings = async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/settings`);
    await region('Usage and budget').getByText('Tokens today').waitFor();
    await region('ntfy off').waitFor();
    await page.getByText('Nothing sent yet.').waitFor();
  };

  beforeAll(async () => {
    fixture = await startStackFixture({
      USER_DAILY_TOKEN_LIMIT: String(DAILY_TOKENS),
      // 0: no daily cost limit.
      USER_DAILY_COST_LIMIT_USD: '0',
      USER_REQUESTS_PER_MINUTE: '100',
    });
    fixture.fake.onChat((request) =>
      isTurnRequest(request)
        ? { content: 'Noted.', usage: TURN_USAGE }
        : { content: '{"operations": []}', usage: { inputTokens: 10, outputTokens: 1 } },
    );
    key = (await fixture.createUser('nadia')).apiKey;
    expect((await fixture.chat(key, { message: 'hello' })).status).toBe(200);
    // The day rows follow the calls over JetStream: the page is opened once the turn's is in.
    await waitFor(
      async () => {
        const { body } = await api('GET', '/v1/usage');
        const days = body.days as { purpose: string; inputTokens: number }[];
        return days.some((day) => day.purpose === 'chat' && day.inputTokens >= 1_200) || undefined;
      },
      { what: "the turn's usage in the rollup", timeoutMs: 30_000 },
    );
    browser = await openBrowserPage({ locale: 'en-GB' });
    page = browser.page;
    await signIn(page, fixture.stack.gatewayUrl, key);
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('lists its parts, and each link jumps to its part', async () => {
    await openSettings();
    const links = page.getByRole('navigation', { name: 'Settings sections' }).getByRole('link');
    expect(await links.allTextContents()).toEqual([
      'Appearance',
      'Time zone',
      'Instructions',
      'Notifications',
      'Push',
      'API keys',
      'Usage',
    ]);
    await links.getByText('Usage', { exact: true }).click();
    expect(new URL(page.url()).hash).toBe('#settings-usage');
    // Scrolled into the main column's view, below the sticky links.
    await expect
      .poll(() =>
        page.evaluate(`(() => {
          const part = document.getElementById('settings-usage').getBoundingClientRect();
          return part.top >= 0 && part.top < window.innerHeight;
        })()`),
      )
      .toBe(true);
    await browser.shoot('settings-parts-desktop');
  });

  it('saves the time zone, and it holds across a reload', async () => {
    const part = region('Time zone');
    await part.getByText('Not set yet').waitFor();
    await part.getByLabel('Or choose').selectOption(ZONE);
    await part.getByRole('button', { name: 'Save zone' }).click();
    await part.getByText(`Times are told in ${ZONE}.`).waitFor();
    expect((await api('GET', '/v1/me')).body.user).toMatchObject({
      timeZone: ZONE,
      isTimeZoneSet: true,
    });
    await openSettings();
    await region('Time zone').getByText(`Times are told in ${ZONE}.`).waitFor();
    expect(await page.getByLabel('Change to').inputValue()).toBe(ZONE);
  });

  it('saves quiet hours, shows them after a reload, and turns them off', async () => {
    const form = page.getByRole('form', { name: 'Quiet hours' });
    await form.getByLabel('Keep quiet hours').check();
    await form.getByLabel('From').fill('21:30');
    await form.getByLabel('Until').fill('07:15');
    await form.getByRole('button', { name: 'Save quiet hours' }).click();
    await form.getByText('Saved.').waitFor();
    await openSettings();
    await page.getByText(`From 21:30 to 07:15, ${ZONE} time`, { exact: false }).waitFor();
    expect(await form.getByLabel('From').inputValue()).toBe('21:30');
    expect(await form.getByLabel('Until').inputValue()).toBe('07:15');

    await form.getByLabel('Keep quiet hours').uncheck();
    await form.getByRole('button', { name: 'Save quiet hours' }).click();
    await page.getByText('None: notifications come at any hour.').waitFor();
    expect((await api('GET', '/v1/notifications/settings')).body.settings).toMatchObject({
      quietHours: null,
    });
  });

  it('creates an API key, shows it once, and revokes it', async () => {
    const part = region('API keys');
    // The key this browser signed in with is marked, so that it is not revoked by mistake.
    const own = part.getByRole('listitem').filter({ hasText: 'this browser' });
    expect(await own.count()).toBe(1);

    await part.getByLabel('Name (optional)').fill('phone shortcut');
    await part.getByRole('button', { name: 'Create key' }).click();
    const shown = part.locator('.new-key-value');
    await shown.waitFor();
    const created = (await shown.textContent()) ?? '';
    expect(created.length).toBeGreaterThan(20);
    // It works at once, and the list names it by its prefix only.
    expect((await api('GET', '/v1/me', undefined, created)).status).toBe(200);
    const row = part.getByRole('listitem', { name: 'phone shortcut' });
    await row.waitFor();
    const prefix = ((await row.locator('code').textContent()) ?? '').replace('…', '');
    expect(created.startsWith(prefix)).toBe(true);
    await part.scrollIntoViewIfNeeded();
    await browser.shoot('settings-new-key-desktop');

    await part.getByRole('button', { name: 'Done' }).click();
    expect(await page.content()).not.toContain(created);

    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await part.getByText('1 revoked key not shown.').waitFor();
    expect(await row.count()).toBe(0);
    expect((await api('GET', '/v1/me', undefined, created)).status).toBe(401);
    // Still signed in with the browser's own key.
    expect(await own.count()).toBe(1);
  });

  it("shows today's usage against the daily budget, and the days", async () => {
    const part = region('Usage and budget');
    const text = (await part.textContent()) ?? '';
    expect(text).toContain('Tokens today');
    expect(text).toMatch(/Tokens today[\d,]+ of 50,000/);
    expect(text).toContain('Cost today$0 (no limit)');
    expect(text).toContain('at most 100');
    const today = new Date().toISOString().slice(0, 10);
    const row = part.getByRole('row').filter({ has: page.getByRole('rowheader', { name: today }) });
    // At least the turn's 1,200 tokens in, in one call or more.
    const cells = await row.getByRole('cell').allTextContents();
    expect(Number(cells[0])).toBeGreaterThanOrEqual(1);
    expect(Number((cells[1] ?? '').replaceAll(',', ''))).toBeGreaterThanOrEqual(1_200);
  });

  it('lists a device subscribed to push, picks what it is sent, and removes it', async () => {
    // Headless Chromium has no push service to subscribe with: the device is registered as the
    // page would, through the API, with keys made here.
    const p256dh = createECDH('prime256v1').generateKeys().toString('base64url');
    const subscribed = await api('POST', '/v1/notifications/push/subscriptions', {
      endpoint: 'https://127.0.0.1:9/push/device-1',
      keys: { p256dh, auth: randomBytes(16).toString('base64url') },
      deviceName: 'Test phone',
    });
    expect(subscribed.status).toBe(201);
    await openSettings();
    const part = region('Push notifications on');
    const device = part.getByRole('listitem', { name: 'Test phone' });
    await device.waitFor();
    expect(await device.textContent()).toContain('127.0.0.1');
    // 127.0.0.1 is a secure context to Chromium: the page offers to subscribe this browser too.
    await part.getByRole('button', { name: 'Subscribe this device' }).waitFor();
    await part.scrollIntoViewIfNeeded();
    await browser.shoot('settings-push-devices-desktop');

    // What the devices are sent is the channel's: notes and mission reports off.
    const form = part.getByRole('form', { name: 'Push notifications settings' });
    await form.getByLabel('Notes from Jarvis').uncheck();
    await form.getByLabel('Mission reports').uncheck();
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('Saved.').waitFor();
    const { body } = await api('GET', '/v1/notifications/channels');
    const channel = (body.channels as { type: string; events: string[] }[]).find(
      (one) => one.type === 'webpush',
    );
    expect(channel?.events).toContain('reminder');
    expect(channel?.events).toContain('approval_request');
    expect(channel?.events).not.toContain('note');
    expect(channel?.events).not.toContain('mission_report');

    await device.getByRole('button', { name: 'Remove' }).click();
    await region('Push notifications off').getByText('No device is subscribed yet.').waitFor();
    expect((await api('GET', '/v1/notifications/push/subscriptions')).body).toEqual({
      subscriptions: [],
    });
  });

  it('follows the system colour scheme until one is chosen, and keeps the choice', async () => {
    await page.emulateMedia({ colorScheme: 'light' });
    expect(await background()).toBe(LIGHT_BG);
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await background()).toBe(DARK_BG);
    expect(await dataTheme()).toBe(null);
    await page.locator('#settings-appearance').scrollIntoViewIfNeeded();
    await browser.shoot('settings-dark-desktop');

    // Light, chosen while the system is dark: it wins, and lasts across a reload.
    const part = region('Appearance');
    await part.getByLabel('Light').check();
    expect(await background()).toBe(LIGHT_BG);
    await openSettings();
    expect(await dataTheme()).toBe('light');
    expect(await background()).toBe(LIGHT_BG);
    expect(await region('Appearance').getByLabel('Light').isChecked()).toBe(true);

    // Dark, chosen while the system is light.
    await page.emulateMedia({ colorScheme: 'light' });
    await region('Appearance').getByLabel('Dark').check();
    expect(await background()).toBe(DARK_BG);
    await openSettings();
    expect(await background()).toBe(DARK_BG);
    // A page load is in the chosen scheme from its first frame (a frame's callbacks run before
    // it is painted), on the chat too, not only on Settings: no flash of the system's scheme.
    await page.addInitScript({
      content: `requestAnimationFrame(() => {
        window.themeAtFirstFrame = document.documentElement.dataset.theme ?? 'none';
      });`,
    });
    await page.goto(`${fixture.stack.gatewayUrl}/chat`);
    await page.getByLabel('Message', { exact: true }).waitFor();
    expect(await page.evaluate('window.themeAtFirstFrame')).toBe('dark');
    expect(await background()).toBe(DARK_BG);
    await browser.shoot('chat-dark-desktop');

    // Back to the system's.
    await openSettings();
    await region('Appearance').getByLabel('As the system').check();
    expect(await dataTheme()).toBe(null);
    expect(await background()).toBe(LIGHT_BG);
    expect(await page.evaluate("localStorage.getItem('jarvis.theme')")).toBe(null);
  });

  it('fits a phone screen in either scheme', async () => {
    await page.setViewportSize(PHONE);
    const isWiderThanScreen = () =>
      page.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await openSettings();
      expect(await isWiderThanScreen()).toBe(false);
      await browser.shoot(`settings-${scheme}-phone`);
      await page.locator('#settings-keys').scrollIntoViewIfNeeded();
      await browser.shoot(`settings-keys-usage-${scheme}-phone`);
    }
  });

  it('broke no content security policy and threw no script error', () => {
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
