import { noticeFromPush, sameOriginPath } from './sw-payload';

// Jarvis's service worker, built by Vite as its own entry into /sw.js (vite.config.ts), so its
// scope is the whole origin. It keeps the app shell so the UI opens with no network, and shows
// Web Push notifications. API answers (/v1) never go through its cache: they are the user's
// data, behind the key, and stale ones would be wrong.

// The service worker's globals. The web UI's TypeScript program has the DOM library, which
// lacks them, and adding the WebWorker library beside it clashes; so the few used are here.
type ExtendableEvent = Event & { waitUntil(promise: Promise<unknown>): void };
type FetchEvent = ExtendableEvent & {
  request: Request;
  respondWith(response: Response | Promise<Response>): void;
};
type PushEvent = ExtendableEvent & { data: { text(): string } | null };
type WindowClient = {
  url: string;
  focus(): Promise<WindowClient>;
  postMessage(message: unknown): void;
};
type NotificationEvent = ExtendableEvent & { notification: Notification };
type WorkerScope = {
  location: Location;
  registration: ServiceWorkerRegistration;
  clients: {
    claim(): Promise<void>;
    matchAll(options: { type: 'window'; includeUncontrolled: boolean }): Promise<WindowClient[]>;
    openWindow(url: string): Promise<WindowClient | null>;
  };
  skipWaiting(): Promise<void>;
  addEventListener(type: 'install' | 'activate', listener: (event: ExtendableEvent) => void): void;
  addEventListener(type: 'fetch', listener: (event: FetchEvent) => void): void;
  addEventListener(type: 'push', listener: (event: PushEvent) => void): void;
  addEventListener(type: 'notificationclick', listener: (event: NotificationEvent) => void): void;
};
declare const self: WorkerScope;

// The build writes these in (vite.config.ts, precacheShell): the hashed files of this build
// under assets/, and a version taken from their names, so each deploy gets its own cache.
declare const __SHELL_ASSETS__: string[];
declare const __SHELL_VERSION__: string;

const CACHE_PREFIX = 'jarvis-shell-';
const CACHE = `${CACHE_PREFIX}${__SHELL_VERSION__}`;
// index.html is cached under "/": every client route (/chat, /settings/…) is that same page.
const SHELL_PAGE = '/';
// The files of web/public the installed app uses (the manifest, its icons, the theme script).
const PUBLIC_FILES = [
  '/manifest.webmanifest',
  '/theme.js',
  '/favicon.svg',
  '/icons/icon-192.png',
  '/icons/icon-512.png',
  '/icons/maskable-512.png',
];
const SHELL = [SHELL_PAGE, ...PUBLIC_FILES, ...__SHELL_ASSETS__];
const SHELL_PATHS = new Set(SHELL);
// Paths that are the API's or the operator's, never the app's: left to the network.
const NETWORK_ONLY = ['/v1/', '/readyz', '/healthz', '/metrics'];

self.addEventListener('install', (event) => {
  // `cache: 'reload'` skips the HTTP cache, which could hold a previous deploy's index.html.
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: 'reload' }))))
      // A new deploy's worker takes over at once rather than after every tab closes: the
      // pages it then serves are the new build's, and an open page keeps its loaded assets.
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) =>
        Promise.all(
          names
            .filter((name) => name.startsWith(CACHE_PREFIX) && name !== CACHE)
            .map((name) => caches.delete(name)),
        ),
      )
      .then(() => self.clients.claim()),
  );
});

// What Traefik answers while the gateway is down or restarting (a deploy): its bare error page
// helps nobody; the cached shell opens, and its status badge says the server is unreachable.
const GATEWAY_DOWN = new Set([502, 503, 504]);

// A page load goes to the network first, so an online user always gets the current build; with
// no network, or no gateway behind the proxy, it gets the cached shell.
async function navigation(request: Request): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(request);
  } catch (error) {
    const cached = await caches.match(SHELL_PAGE, { cacheName: CACHE });
    if (cached) return cached;
    throw error;
  }
  if (!GATEWAY_DOWN.has(response.status)) return response;
  return (await caches.match(SHELL_PAGE, { cacheName: CACHE })) ?? response;
}

// The shell's files have content-hashed names (or are the manifest and icons): the cached copy
// is the right one, and the network is only asked when it is missing.
async function shellFile(request: Request): Promise<Response> {
  const cached = await caches.match(request, { cacheName: CACHE });
  return cached ?? fetch(request);
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (NETWORK_ONLY.some((prefix) => url.pathname.startsWith(prefix))) return;
  if (request.mode === 'navigate') {
    event.respondWith(navigation(request));
    return;
  }
  if (SHELL_PATHS.has(url.pathname)) event.respondWith(shellFile(request));
});

self.addEventListener('push', (event) => {
  const notice = noticeFromPush(event.data?.text(), self.location.origin);
  event.waitUntil(
    self.registration.showNotification(notice.title, {
      ...notice.options,
      icon: '/icons/icon-192.png',
    }),
  );
});

// Tapping a notification opens where it points, in the app's window if one is open (the page
// routes to it in place: sw-register.ts), else in a new one.
async function openTarget(url: string): Promise<void> {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
  if (open) {
    // The message first: should the browser refuse the focus, the page is still where the
    // user wanted it when they come to it.
    open.postMessage({ type: 'open', url });
    await open.focus();
    return;
  }
  await self.clients.openWindow(url);
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data: unknown = event.notification.data;
  const url = typeof data === 'object' && data !== null && 'url' in data ? data.url : undefined;
  event.waitUntil(openTarget(sameOriginPath(url, self.location.origin)));
});
