import {
  MeResponse,
  type Schedule,
  ScheduleResponse,
  SchedulesListResponse,
} from '@jarvis/contracts';
import { type StackFixture, startStackFixture } from '@jarvis/testkit';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// The Schedules page and live reminders in Debian's Chromium, against the whole stack with its
// scheduler (web-ui.test.ts explains the set-up). The browser runs in New York and in British
// English; the user's zone is set to Colombo (+05:30, no DST), so a time shown on Colombo's
// clock can be neither the browser's nor UTC. (Not Kolkata: Chromium lists it by its old name,
// Asia/Calcutta.)
const BROWSER_ZONE = 'America/New_York';
const USER_ZONE = 'Asia/Colombo';

describe('schedules in the web UI', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;

  const shoot = (name: string) => browser.shoot(name);
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: response.status === 204 ? {} : await response.json() };
  };
  const me = async () => MeResponse.parse((await api('GET', '/v1/me')).body).user;
  const createSchedule = async (fields: Record<string, unknown>) => {
    const created = await api('POST', '/v1/schedules', fields);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return ScheduleResponse.parse(created.body).schedule;
  };
  const getSchedule = async (id: string) =>
    ScheduleResponse.parse((await api('GET', `/v1/schedules/${id}`)).body).schedule;
  const listSchedules = async () =>
    SchedulesListResponse.parse((await api('GET', '/v1/schedules')).body).schedules;

  const sections = () => page.getByRole('navigation', { name: 'Sections' });
  const openSection = (name: string) => sections().getByRole('link', { name }).click();
  const scheduleItem = (text: string): Locator =>
    page.getByRole('list', { name: 'Schedules' }).getByRole('listitem').filter({ hasText: text });

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('grace')).apiKey;
    browser = await openBrowserPage({ locale: 'en-GB', timezoneId: BROWSER_ZONE });
    page = browser.page;
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('offers the browser zone while none is set, and keeps the zone chosen', async () => {
    await signIn(page, fixture.stack.gatewayUrl, key);
    await openSection('Schedules');
    expect(new URL(page.url()).pathname).toBe('/schedules');
    await page.getByText('Your time zone is not set yet: times are told in UTC.').waitFor();
    // The zone is set with the other settings.
    await page.getByRole('link', { name: 'Change it in Settings' }).click();
    expect(new URL(page.url()).pathname).toBe('/settings');

    const setting = page.getByRole('region', { name: 'Time zone' });
    await setting.getByText('Not set yet: times are told in UTC.').waitFor();
    expect(await me()).toMatchObject({ timeZone: 'UTC', isTimeZoneSet: false });
    await shoot('time-zone-unset-desktop');
    await setting.getByRole('button', { name: `Use ${BROWSER_ZONE}` }).click();
    await setting.getByText(`Times are told in ${BROWSER_ZONE}.`).waitFor();
    expect(await me()).toMatchObject({ timeZone: BROWSER_ZONE, isTimeZoneSet: true });

    await setting.getByLabel('Change to').selectOption(USER_ZONE);
    await setting.getByRole('button', { name: 'Save zone' }).click();
    await setting.getByText(`Times are told in ${USER_ZONE}.`).waitFor();
    expect(await me()).toMatchObject({ timeZone: USER_ZONE, isTimeZoneSet: true });
    await openSection('Schedules');
    await page.locator('.zone-note').getByText(USER_ZONE).waitFor();
  });

  let passport: Schedule;

  it("lists a schedule made through the API, its next time on the user's clock", async () => {
    // 03:30 UTC is 09:00 in Colombo, and 22:30 the evening before in New York.
    passport = await createSchedule({
      kind: 'once',
      at: '2030-01-15T03:30:00Z',
      name: 'Passport',
      action: { type: 'remind', text: 'Renew the passport' },
    });
    await page.reload();
    const item = scheduleItem('Passport');
    await item.waitFor();
    const next = item.locator('.next-run');
    expect(await next.textContent()).toContain('15 Jan 2030');
    expect(await next.textContent()).toContain('09:00');
    expect(await item.textContent()).toContain('Renew the passport');
    expect(await item.locator('.badge').textContent()).toBe('active');
    await shoot('schedules-desktop');
  });

  it('pauses and resumes it', async () => {
    const item = scheduleItem('Passport');
    await item.getByRole('button', { name: 'Pause' }).click();
    await item.getByRole('button', { name: 'Resume' }).waitFor();
    expect(await item.locator('.badge').textContent()).toBe('paused');
    expect((await getSchedule(passport.id)).status).toBe('paused');

    await item.getByRole('button', { name: 'Resume' }).click();
    await item.getByRole('button', { name: 'Pause' }).waitFor();
    expect(await item.locator('.badge').textContent()).toBe('active');
    const resumed = await getSchedule(passport.id);
    expect(resumed).toMatchObject({ status: 'active', nextRunAt: '2030-01-15T03:30:00.000Z' });
    expect(await item.locator('.next-run').textContent()).toContain('09:00');
  });

  it('adds reminders from the form, once on the user clock and on a cron rule with a preview', async () => {
    const form = page.getByRole('form', { name: 'New reminder' });
    await page.getByText('New reminder', { exact: true }).click();
    await form.getByLabel('Remind me to').fill('Water the plants');
    await form.getByLabel(`When (${USER_ZONE})`).fill('2030-02-01T08:15');
    await form.getByRole('button', { name: 'Add reminder' }).click();
    await scheduleItem('Water the plants').waitFor();
    const once = (await listSchedules()).find(
      (schedule) =>
        schedule.action.type === 'remind' && schedule.action.text === 'Water the plants',
    );
    // 08:15 in Colombo, whatever the browser's own zone.
    expect(once).toMatchObject({ kind: 'once', at: '2030-02-01T02:45:00.000Z' });

    await form.getByLabel('Remind me to').fill('Stand-up');
    await form.getByLabel('Repeats').selectOption('cron');
    await form.getByLabel('Cron rule').fill('30 7 * * 1-5');
    expect(await form.getByLabel('Time zone').inputValue()).toBe(USER_ZONE);
    const preview = form.getByRole('list', { name: 'Next times' }).getByRole('listitem');
    await expect.poll(() => preview.count()).toBe(5);
    for (const time of await preview.allTextContents()) {
      expect(time).toContain('07:30');
      expect(time).toMatch(/^(Mon|Tue|Wed|Thu|Fri)/);
    }
    // A rule the scheduler cannot read is named as such before anything is made.
    await form.getByLabel('Cron rule').fill('61 7 * * *');
    await expect.poll(() => form.getByRole('alert').textContent()).toMatch(/minute/);
    await form.getByLabel('Cron rule').fill('30 7 * * 1-5');
    await expect.poll(() => preview.count()).toBe(5);
    await shoot('schedule-form-desktop');
    await form.getByRole('button', { name: 'Add reminder' }).click();
    await scheduleItem(`cron 30 7 * * 1-5 in ${USER_ZONE}`).waitFor();
    const cron = (await listSchedules()).find((schedule) => schedule.kind === 'cron');
    expect(cron).toMatchObject({
      cron: '30 7 * * 1-5',
      timeZone: USER_ZONE,
      action: { type: 'remind', text: 'Stand-up' },
      status: 'active',
    });
  });

  it('shows a reminder in the open chat as it arrives, without a reload', async () => {
    await openSection('Chat');
    // The user has said nothing yet: the reminder is what makes the conversation.
    await page.getByText('Say hello.', { exact: false }).waitFor();
    await page.evaluate('window.isSamePage = true');

    const due = new Date(Date.now() + 2_000);
    await createSchedule({
      kind: 'once',
      at: due.toISOString(),
      action: { type: 'remind', text: 'Time to stretch!' },
    });
    const reminder = page.locator('.msg-assistant').filter({ hasText: 'Time to stretch!' });
    await reminder.waitFor({ timeout: 20_000 });
    const lateMs = Date.now() - due.getTime();
    expect(lateMs).toBeLessThan(10_000);
    expect(await page.evaluate('window.isSamePage')).toBe(true);
    expect(await reminder.getByRole('link', { name: 'Reminder' }).isVisible()).toBe(true);
    await shoot('reminder-chat-desktop');

    // Stored as a message of the conversation: after a reload it is there once, from history.
    await page.reload();
    await page.locator('.msg-assistant').first().waitFor();
    expect(await page.locator('.msg-assistant').allTextContents()).toEqual([
      expect.stringContaining('Time to stretch!'),
    ]);
  });

  it('shows the history of a schedule, with the message it posted', async () => {
    await openSection('Schedules');
    await scheduleItem('Time to stretch!').getByRole('link').click();
    const history = page.getByRole('list', { name: 'History' });
    const run = history.getByRole('listitem').first();
    await run.waitFor();
    expect(await run.locator('.badge').textContent()).toBe('fired');
    expect(await run.getByRole('link', { name: 'Message in the chat' }).isVisible()).toBe(true);
    expect(await page.locator('.meta').textContent()).toContain('ended');
    await shoot('schedule-detail-desktop');
  });

  it('deletes a schedule only once the user confirms', async () => {
    await openSection('Schedules');
    const item = scheduleItem('Passport');
    await item.waitFor();
    page.once('dialog', (dialog) => void dialog.dismiss());
    await item.getByRole('button', { name: 'Delete' }).click();
    expect((await api('GET', `/v1/schedules/${passport.id}`)).status).toBe(200);

    page.once('dialog', (dialog) => {
      expect(dialog.message()).toContain('Passport');
      void dialog.accept();
    });
    await item.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => item.count()).toBe(0);
    expect((await api('GET', `/v1/schedules/${passport.id}`)).status).toBe(404);
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize(PHONE);
    await page.reload();
    await scheduleItem('Stand-up').waitFor();
    await page.getByText('New reminder', { exact: true }).click();
    const isWiderThanScreen = () =>
      page.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    expect(await isWiderThanScreen()).toBe(false);
    await shoot('schedules-phone');
  });

  it('broke no content security policy and threw no script error', () => {
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
