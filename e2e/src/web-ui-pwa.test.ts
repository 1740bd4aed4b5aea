import { createServer } from 'node:http';
import { type StackFixture, startStackFixture } from '@jarvis/testkit';
import type { CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// The installable app in Debian's Chromium (./browser.ts), against the whole stack: the web
// manifest and its icons, the service worker (/sw.js, built from web/src/sw.ts) that keeps the
// app shell for offline starts and shows Web Push notifications. The gateway is on 127.0.0.1,
// which browsers count as a secure context, as they do localhost: no certificate needed here.
type Notice = { title: string; body: string; tag: string; data: { url?: string } };

const SHOWN_NOTIFICATIONS = `navigator.serviceWorker.ready
  .then((registration) => registration.getNotifications())
  .then((list) => list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data })))`;

describe('the web UI as an installable app', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  let gatewayUrl: string;

  const shoot = (name: string) => browser.shoot(name);
  const offlineBanner = () => page.getByRole('status').filter({ hasText: /^Offline$/ });

  beforeAll(async () => {
    fixture = await startStackFixture();
    gatewayUrl = fixture.stack.gatewayUrl;
    key = (await fixture.createUser('pia')).apiKey;
    browser = await openBrowserPage({ isPersistent: true });
    page = browser.page;
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('serves the manifest, its icons and the service worker with their types', async () => {
    const manifestResponse = await fetch(`${gatewayUrl}/manifest.webmanifest`);
    expect(manifestResponse.status).toBe(200);
    expect(manifestResponse.headers.get('content-type')).toMatch(/^application\/manifest\+json/);
    const manifest = (await manifestResponse.json()) as {
      start_url: string;
      display: string;
      icons: { src: string; sizes: string; type: string; purpose: string }[];
    };
    expect(manifest).toMatchObject({ start_url: '/', display: 'standalone' });
    expect(manifest.icons.map((icon) => `${icon.sizes} ${icon.purpose}`)).toEqual([
      '192x192 any',
      '512x512 any',
      '512x512 maskable',
    ]);
    for (const icon of manifest.icons) {
      const response = await fetch(`${gatewayUrl}${icon.src}`);
      expect(response.status, icon.src).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      // The PNG signature, and the size the manifest claims (IHDR width and height).
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
      const side = Number(icon.sizes.split('x')[0]);
      expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([side, side]);
    }

    const worker = await fetch(`${gatewayUrl}/sw.js`);
    expect(worker.status).toBe(200);
    expect(worker.headers.get('content-type')).toMatch(/^text\/javascript/);
    // Revalidated at every check, so a deploy's new worker is found at the next visit.
    expect(worker.headers.get('cache-control')).toBe('no-cache');
    const code = await worker.text();
    // The build wrote in this build's hashed files, and nothing imports a chunk.
    expect(code).not.toContain('__SHELL_ASSETS__');
    expect(code).toMatch(/"\/assets\/index-[\w-]+\.js"/);
    expect(code).not.toMatch(/^\s*import\b/m);

    // A same-origin policy still, with nothing inline: the manifest and the worker come under
    // default-src and script-src 'self'.
    const index = await fetch(`${gatewayUrl}/`);
    const policy = (index.headers.get('content-security-policy') ?? '').split(';');
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("script-src 'self'");
    expect(policy.filter((directive) => directive.includes('unsafe-inline'))).toEqual([]);
    const html = await index.text();
    expect(html).toContain('<link rel="manifest" href="/manifest.webmanifest"');
  });

  it('registers the worker, which takes the page, and Chromium finds the app installable', async () => {
    await signIn(page, gatewayUrl, key);
    await expect
      .poll(() => page.evaluate('navigator.serviceWorker.controller?.scriptURL ?? null'), {
        timeout: 15_000,
      })
      .toBe(`${gatewayUrl}/sw.js`);
    // Any DevTools session left attached makes a page the worker serves after a reload read
    // navigator.onLine as true under offline emulation (the last test): each one is detached.
    const devtools = await page.context().newCDPSession(page);
    const { installabilityErrors } = (await devtools.send('Page.getInstallabilityErrors')) as {
      installabilityErrors: { errorId: string }[];
    };
    expect(installabilityErrors).toEqual([]);
    const { errors } = await devtools.send('Page.getAppManifest');
    expect(errors).toEqual([]);
    await devtools.detach();
    // The shell is in the worker's cache: the page, the hashed script and stylesheet, the icons.
    const cached = (await page.evaluate(`caches.keys().then(async (names) => {
      const cache = await caches.open(names.find((name) => name.startsWith('jarvis-shell-')));
      return (await cache.keys()).map((request) => new URL(request.url).pathname).sort();
    })`)) as string[];
    expect(cached).toContain('/');
    expect(cached).toContain('/manifest.webmanifest');
    expect(cached).toContain('/icons/maskable-512.png');
    expect(cached.filter((path) => /^\/assets\/index-[\w-]+\.(js|css)$/.test(path))).toHaveLength(
      2,
    );
    expect(cached.filter((path) => path.startsWith('/v1/'))).toEqual([]);
  });

  it('shows a push message as a notification that leads into the app', async () => {
    await page.context().grantPermissions(['notifications'], { origin: gatewayUrl });
    const workers = await page.context().newCDPSession(page);
    try {
      await pushAndTap(workers);
    } finally {
      // Left attached, it would spoil the offline test's navigator.onLine (see above).
      await workers.detach();
    }
  });

  async function pushAndTap(workers: CDPSession): Promise<void> {
    const registrations: { registrationId: string; scopeURL: string }[] = [];
    workers.on('ServiceWorker.workerRegistrationUpdated', (event) => {
      registrations.push(...event.registrations);
    });
    await workers.send('ServiceWorker.enable');
    await expect.poll(() => registrations.length).toBeGreaterThan(0);
    const registration = registrations.find((entry) => entry.scopeURL === `${gatewayUrl}/`);
    expect(registration).toBeDefined();
    const push = (payload: string) =>
      workers.send('ServiceWorker.deliverPushMessage', {
        origin: gatewayUrl,
        registrationId: registration?.registrationId ?? '',
        data: payload,
      });
    const shown = async () => (await page.evaluate(SHOWN_NOTIFICATIONS)) as Notice[];

    // A link off the install is never where a tap leads.
    await push(
      JSON.stringify({
        title: 'Reminder',
        body: 'Look here',
        url: 'https://elsewhere.example/phish',
        tag: 'jarvis-reminder-1',
      }),
    );
    await expect
      .poll(shown)
      .toEqual([
        { title: 'Reminder', body: 'Look here', tag: 'jarvis-reminder-1', data: { url: '/' } },
      ]);
    // Exactly what the tools service's webpush sender sends; the same tag replaces the
    // notification shown rather than adding one.
    await push(
      JSON.stringify({
        title: 'Approval needed',
        body: 'memory_delete waits for you',
        url: '/approvals',
        tag: 'jarvis-reminder-1',
      }),
    );
    await expect.poll(shown).toEqual([
      {
        title: 'Approval needed',
        body: 'memory_delete waits for you',
        tag: 'jarvis-reminder-1',
        data: { url: '/approvals' },
      },
    ]);

    // A tap, as the worker's own notificationclick handler gets it: DevTools cannot click a
    // notification, so the event is dispatched in the worker (an untrusted event: its
    // waitUntil throws after the handler has started its work, and the window's focus is
    // refused). The open page is told, and routes there in place.
    const [worker] = page.context().serviceWorkers();
    expect(worker?.url()).toBe(`${gatewayUrl}/sw.js`);
    await worker?.evaluate(`self.registration.getNotifications().then(([notification]) =>
      self.dispatchEvent(new NotificationEvent('notificationclick', { notification })))`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/approvals');
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await expect.poll(shown).toEqual([]);
  }

  it('opens from the cached shell while the proxy answers 502 for a gateway that is down', async () => {
    // What Traefik does while the gateway restarts: the port answers, with a bare error page.
    await fixture.stack.stopService('gateway');
    const proxy = createServer((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/plain' }).end('Bad Gateway');
    });
    await new Promise<void>((resolve) =>
      proxy.listen(Number(new URL(gatewayUrl).port), '127.0.0.1', resolve),
    );
    try {
      const response = await page.reload();
      expect(response?.fromServiceWorker()).toBe(true);
      expect(response?.status()).toBe(200);
      await page.getByRole('navigation', { name: 'Sections' }).waitFor();
      // The device is online: no Offline banner; the server's state is the status badge's.
      expect(await offlineBanner().count()).toBe(0);
      expect(await page.getByText('Bad Gateway').count()).toBe(0);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('opens offline from the cached shell and says it is offline', async () => {
    const context = page.context();
    await context.setOffline(true);
    // Nothing listens on the gateway's port now either: whatever the emulation covers, only the
    // worker's cache can answer.
    const response = await page.reload();
    expect(response?.fromServiceWorker()).toBe(true);
    await page.getByRole('navigation', { name: 'Sections' }).waitFor();
    const banner = offlineBanner();
    await banner.waitFor();
    await shoot('pwa-offline-desktop');
    await page.setViewportSize(PHONE);
    await shoot('pwa-offline-phone');
    // A client route other than the one cached loads the same shell.
    await page.goto(`${gatewayUrl}/settings`);
    await banner.waitFor();
    expect(browser.unexpectedProblems().filter((text) => text.includes('CSP'))).toEqual([]);

    await context.setOffline(false);
    await banner.waitFor({ state: 'detached' });
  });
});
