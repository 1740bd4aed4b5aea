import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

// Debian's Chromium driven by playwright-core, for the web UI's browser tests. Screenshots land
// in e2e/artifacts/screenshots/ (git-ignored) to be looked at.
const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = fileURLToPath(new URL('../artifacts/screenshots/', import.meta.url));
const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export type BrowserPage = {
  context: BrowserContext;
  page: Page;
  // Every script error, console error and Content-Security-Policy violation of the page.
  problems: string[];
  shoot(name: string): Promise<void>;
  // The problems that count: a failed resource load is the 4xx a test provoked.
  unexpectedProblems(): string[];
  close(): Promise<void>;
};

export type BrowserOptions = {
  locale?: string;
  timezoneId?: string;
  // A profile on disk, as a user's browser has, rather than Playwright's usual incognito-like
  // context: Chromium never finds an app installable in an incognito one.
  isPersistent?: boolean;
};

export async function openBrowserPage(options: BrowserOptions = {}): Promise<BrowserPage> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does)`);
  }
  await mkdir(SCREENSHOTS, { recursive: true });
  const { isPersistent, ...contextOptions } = options;
  const launchOptions = {
    executablePath: CHROMIUM,
    headless: true,
    // Playwright already passes --no-sandbox (needed as root), --no-first-run and
    // --disable-background-networking; the rest keep Chromium off this closed network.
    args: ['--disable-gpu', '--disable-quic', '--disable-component-update', '--disable-sync'],
  };
  const profile = isPersistent ? await mkdtemp(join(tmpdir(), 'jarvis-chromium-')) : undefined;
  const context = profile
    ? await chromium.launchPersistentContext(profile, {
        ...launchOptions,
        viewport: DESKTOP,
        ...contextOptions,
      })
    : await (await chromium.launch(launchOptions)).newContext({
        viewport: DESKTOP,
        ...contextOptions,
      });
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  // Every violation of the policy, reported or not on the console: an inline style the
  // tightened style-src refuses would show here.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI));`,
  });
  return {
    context,
    page,
    problems,
    shoot: async (name) => {
      await page.screenshot({ path: `${SCREENSHOTS}${name}.png` });
    },
    unexpectedProblems: () =>
      problems.filter((text) => !text.startsWith('Failed to load resource')),
    close: async () => {
      // Closing a launched browser's context leaves the browser: close the browser itself.
      await (context.browser() ?? context).close();
      if (profile) await rm(profile, { recursive: true, force: true });
    },
  };
}

// Signs in on the login page with the key, and waits for the chat (the first section).
export async function signIn(page: Page, gatewayUrl: string, key: string): Promise<void> {
  await page.goto(`${gatewayUrl}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByLabel('Message', { exact: true }).waitFor();
}
