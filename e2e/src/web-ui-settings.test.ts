import { createHmac, randomBytes } from 'node:crypto';
import { ChannelsListResponse, SECRET_MASK, SettingsResponse } from '@jarvis/contracts';
import {
  type HttpRecorder,
  type StackFixture,
  startHttpRecorder,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';
import { scanForSecrets } from './secret-scan';
import { confirmationCode, type SmtpStandIn, startSmtpStandIn } from './smtp-stand-in';
import {
  STAND_IN_BOT_USERNAME,
  startTelegramStandIn,
  type TelegramStandIn,
} from './telegram-stand-in';

// The Settings page in Debian's Chromium (./browser.ts), against the whole stack: the channels
// post to local stand-ins (a webhook receiver and an ntfy server, the install's SMTP server, and
// Telegram's Bot API: ./telegram-stand-in.ts), which OUTBOUND_ALLOWED_HOSTS=127.0.0.1 (the stack's) lets the tools
// service reach.
const USER_ZONE = 'Europe/Oslo';
const BOT_TOKEN = `7000001:${randomBytes(16).toString('hex')}`;
const SECRETS = {
  webhook: `whsec-${randomBytes(16).toString('hex')}`,
  ntfy: `tk_${randomBytes(16).toString('hex')}`,
  smtp: `install-pw-${randomBytes(12).toString('hex')}`,
};
const TELEGRAM_USER = { id: 424_242, is_bot: false, first_name: 'Lena', username: 'lena_tg' };

describe('the Settings page', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  let webhook: HttpRecorder;
  let ntfy: HttpRecorder;
  let telegram: TelegramStandIn;
  let smtp: SmtpStandIn;
  const answers: Promise<string>[] = [];

  const shoot = (name: string) => browser.shoot(name);
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: response.status === 204 ? {} : await response.json() };
  };
  const channels = async () =>
    ChannelsListResponse.parse((await api('GET', '/v1/notifications/channels')).body).channels;
  const channelSection = (name: string): Locator => page.getByRole('region', { name });
  const history = () =>
    page.getByRole('list', { name: 'Sent notifications' }).getByRole('listitem');

  beforeAll(async () => {
    webhook = await startHttpRecorder();
    ntfy = await startHttpRecorder();
    telegram = await startTelegramStandIn();
    smtp = await startSmtpStandIn({ jarvis: SECRETS.smtp });
    fixture = await startStackFixture({
      JARVIS_SECRET_KEY: randomBytes(32).toString('base64'),
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: String(smtp.port),
      SMTP_SECURITY: 'none',
      SMTP_USER: 'jarvis',
      SMTP_PASSWORD: SECRETS.smtp,
      SMTP_FROM: 'jarvis@example.test',
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_API_ROOT: telegram.url,
      // Every log line there is, for the secret scan.
      LOG_LEVEL: 'trace',
    });
    key = (await fixture.createUser('lena')).apiKey;
    expect((await api('PATCH', '/v1/me', { timeZone: USER_ZONE })).status).toBe(200);
    browser = await openBrowserPage({ locale: 'en-GB' });
    page = browser.page;
    // Every answer of the API the page read, for the secret scan.
    page.on('response', (response) => {
      if (!new URL(response.url()).pathname.startsWith('/v1/')) return;
      answers.push(
        response
          .text()
          .then((text) => `${response.status()} ${JSON.stringify(response.headers())} ${text}`)
          .catch(() => ''),
      );
    });
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
    await webhook?.close();
    await ntfy?.close();
    await telegram?.close();
    await smtp?.close();
  });

  it('opens from the navigation, with the time zone and no channel yet', async () => {
    await signIn(page, fixture.stack.gatewayUrl, key);
    await page
      .getByRole('navigation', { name: 'Sections' })
      .getByRole('link', { name: 'Settings' })
      .click();
    expect(new URL(page.url()).pathname).toBe('/settings');
    await page
      .getByRole('region', { name: 'Time zone' })
      .getByText(`Times are told in ${USER_ZONE}.`)
      .waitFor();
    await channelSection('Webhook off').waitFor();
    await page.getByText('Nothing sent yet.').waitFor();
    await shoot('settings-desktop');
  });

  it('shows a 400 beside the field it names, then saves the webhook with its secret masked', async () => {
    // Forms are named by their channel; a channel's section by its channel and state.
    const form = page.getByRole('form', { name: 'Webhook settings' });
    await channelSection('Webhook off').waitFor();
    // Not on OUTBOUND_ALLOWED_HOSTS: a private address is refused as web_fetch refuses it.
    await form.getByLabel('URL').fill('http://10.20.30.40/hook');
    await form.getByLabel('Signing secret (16+ characters)').fill(SECRETS.webhook);
    await form.getByRole('button', { name: 'Save' }).click();
    const urlError = form.locator('#channel-webhook-url-error');
    await urlError.waitFor();
    expect(await form.getByLabel('URL').getAttribute('aria-invalid')).toBe('true');
    expect(await channels()).toEqual([]);
    await shoot('settings-field-error-desktop');

    await form.getByLabel('URL').fill(`${webhook.url}/hook`);
    await form.getByRole('button', { name: 'Save' }).click();
    await channelSection('Webhook on').getByText('Saved.').waitFor();
    expect(await urlError.count()).toBe(0);
    const secretField = form.getByLabel('Signing secret (16+ characters)');
    expect(await secretField.inputValue()).toBe('');
    expect(await secretField.getAttribute('placeholder')).toBe(SECRET_MASK);
    expect(await channels()).toEqual([
      expect.objectContaining({ type: 'webhook', url: `${webhook.url}/hook`, secret: SECRET_MASK }),
    ]);
  });

  it('tests the webhook: a signed request arrives and the history shows it', async () => {
    const section = channelSection('Webhook on');
    await section.getByRole('button', { name: 'Test' }).click();
    await expect.poll(() => section.locator('.test-result').textContent()).toContain('sent');
    const request = webhook.requests.at(-1);
    const timestamp = String(request?.headers['x-jarvis-timestamp']);
    const signature = createHmac('sha256', SECRETS.webhook)
      .update(`${timestamp}.${request?.body}`)
      .digest('hex');
    expect(request?.headers['x-jarvis-signature']).toBe(`sha256=${signature}`);

    const item = history().first();
    await item.waitFor();
    expect(await item.locator('.badge').textContent()).toBe('sent');
    expect(await item.textContent()).toContain('webhook');
    expect(await item.textContent()).toContain('1 attempt');
  });

  it('saves ntfy with a token, and a test reaches the server with it', async () => {
    const form = channelSection('ntfy off').getByRole('form', { name: 'ntfy settings' });
    await form.getByLabel('Server').fill(ntfy.url);
    await form.getByLabel('Topic').fill('lena-jarvis');
    await form.getByLabel('Access token (optional)').fill(SECRETS.ntfy);
    await form.getByLabel('Priority').selectOption('4');
    // Only reminders and approval requests.
    for (const kind of [
      'Results of scheduled work',
      'Failures of scheduled work',
      'Mission reports',
      'Notes from Jarvis',
      'Ops alerts (admin)',
    ]) {
      await form.getByLabel(kind).uncheck();
    }
    await form.getByRole('button', { name: 'Save' }).click();
    const section = channelSection('ntfy on');
    await section.getByText('Saved.').waitFor();
    expect((await channels()).find((channel) => channel.type === 'ntfy')).toMatchObject({
      topic: 'lena-jarvis',
      priority: 4,
      token: SECRET_MASK,
      events: ['reminder', 'approval_request'],
    });

    await section.getByRole('button', { name: 'Test' }).click();
    await expect.poll(() => section.locator('.test-result').textContent()).toContain('sent');
    expect(ntfy.requests.at(-1)).toMatchObject({
      path: '/lena-jarvis',
      headers: expect.objectContaining({ authorization: `Bearer ${SECRETS.ntfy}` }),
    });
    await expect.poll(() => history().count()).toBe(2);
  });

  it("confirms the email address with the code the install's SMTP mailed", async () => {
    const form = channelSection('Email off').getByRole('form', { name: 'Email settings' });
    await form.getByLabel('Address').fill('lena@example.test');
    await form.getByRole('button', { name: 'Save' }).click();
    // Nothing goes to the address, not even a test, until it is confirmed.
    const waiting = channelSection('Email unconfirmed');
    const confirm = waiting.getByRole('form', { name: 'Confirm your address' });
    await confirm.waitFor();
    expect(await waiting.getByRole('button', { name: 'Test' }).count()).toBe(0);
    const mail = await waitFor(
      () => smtp.mails.find((one) => one.to.includes('lena@example.test')),
      {
        what: 'the confirmation mail',
      },
    );
    const code = confirmationCode(mail.raw) ?? '';
    expect(code).toMatch(/^\d{6}$/);
    await shoot('settings-email-code-desktop');

    // A wrong code is refused, saying so.
    await confirm.getByLabel('Code').fill(code === '000000' ? '111111' : '000000');
    await confirm.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => confirm.getByRole('alert').textContent()).toMatch(/wrong code/);
    await confirm.getByLabel('Code').fill(code);
    await confirm.getByRole('button', { name: 'Confirm' }).click();
    const section = channelSection('Email on');
    await section.waitFor();
    expect(await page.getByRole('form', { name: 'Confirm your address' }).count()).toBe(0);
    expect((await channels()).find((channel) => channel.type === 'email')).toMatchObject({
      to: 'lena@example.test',
      isConfirmed: true,
    });

    const before = smtp.mails.length;
    await section.getByRole('button', { name: 'Test' }).click();
    await expect.poll(() => section.locator('.test-result').textContent()).toContain('sent');
    expect(smtp.mails.slice(before).map((one) => one.to)).toEqual([['lena@example.test']]);
  });

  it('keeps quiet hours on the user clock', async () => {
    const form = page.getByRole('form', { name: 'Quiet hours' });
    await form.getByLabel('Keep quiet hours').check();
    await form.getByLabel('From').fill('23:00');
    await form.getByLabel('Until').fill('06:30');
    await form.getByRole('button', { name: 'Save quiet hours' }).click();
    await page.getByText(`From 23:00 to 06:30, ${USER_ZONE} time`, { exact: false }).waitFor();
    expect(SettingsResponse.parse((await api('GET', '/v1/notifications/settings')).body)).toEqual({
      settings: { quietHours: { start: '23:00', end: '06:30' }, timeZone: USER_ZONE },
    });
  });

  it('links Telegram with the code sent to the bot, and unlinks', async () => {
    const section = channelSection('Telegram off');
    await section.getByRole('button', { name: 'Link Telegram' }).click();
    const command = await section.locator('.code-value').textContent();
    const code = /^\/start (\S+)$/.exec(command ?? '')?.[1] ?? '';
    expect(code.length).toBeGreaterThanOrEqual(16);
    expect(
      await section.getByRole('link', { name: 'Open the bot in Telegram' }).getAttribute('href'),
    ).toBe(`https://t.me/${STAND_IN_BOT_USERNAME}?start=${code}`);
    // The expiry, on the user's clock.
    expect(await section.locator('.link-code').textContent()).toMatch(/before .*\d\d:\d\d/);
    await shoot('settings-telegram-code-desktop');

    telegram.sendToBot({
      message_id: 1,
      date: Math.floor(Date.now() / 1_000),
      chat: { id: TELEGRAM_USER.id, type: 'private', first_name: 'Lena', username: 'lena_tg' },
      from: TELEGRAM_USER,
      text: `/start ${code}`,
    });
    const linked = channelSection('Telegram on');
    await linked.getByText('Linked to @lena_tg.', { exact: false }).waitFor({ timeout: 20_000 });

    page.once('dialog', (dialog) => void dialog.accept());
    await linked.getByRole('button', { name: 'Unlink' }).click();
    await channelSection('Telegram off').getByRole('button', { name: 'Link Telegram' }).waitFor();
    expect((await channels()).map((channel) => channel.type)).not.toContain('telegram');
  });

  it('removes a channel once the user confirms', async () => {
    page.once('dialog', (dialog) => void dialog.accept());
    await channelSection('Webhook on').getByRole('button', { name: 'Remove' }).click();
    await channelSection('Webhook off').waitFor();
    expect((await channels()).map((channel) => channel.type)).not.toContain('webhook');
  });

  it('never puts a secret into the page', async () => {
    await page.reload();
    await channelSection('ntfy on').waitFor();
    const html = await page.content();
    for (const secret of Object.values(SECRETS)) expect(html).not.toContain(secret);
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize(PHONE);
    await page.reload();
    await channelSection('ntfy on').waitFor();
    await history().first().waitFor();
    const isWiderThanScreen = () =>
      page.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    expect(await isWiderThanScreen()).toBe(false);
    await shoot('settings-phone');
  });

  it('broke no content security policy and threw no script error', () => {
    expect(browser.unexpectedProblems()).toEqual([]);
  });

  // Last: it stops the stack.
  it("shows no secret, the bot's token included, in any answer the page read or any log line", async () => {
    await fixture.stack.stop();
    const scan = scanForSecrets(fixture.stack, await Promise.all(answers), {
      ...SECRETS,
      botToken: BOT_TOKEN,
    });
    console.log(scan.summary);
    expect(scan.found).toEqual([]);
    expect(scan.answers).toBeGreaterThan(20);
  });
});
