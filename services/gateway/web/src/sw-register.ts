import { navigate } from './router';

// Registers the service worker (/sw.js: the offline app shell and push notifications) and
// routes the page when the worker says a notification was tapped. Vite's dev server builds no
// sw.js, so only a production build registers one. Browsers allow a service worker only in a
// secure context (HTTPS, or localhost and 127.0.0.1): elsewhere the UI works as before, online.
export function registerServiceWorker(): void {
  if (!import.meta.env.PROD || !('serviceWorker' in navigator) || !window.isSecureContext) return;
  navigator.serviceWorker.addEventListener('message', (event: MessageEvent<unknown>) => {
    const { data } = event;
    if (typeof data !== 'object' || data === null || !('url' in data)) return;
    // Only this origin's own worker can post here, and it sends a checked same-origin path
    // (sw-payload.ts, not imported: a module both used would become a chunk sw.js imports).
    const { url } = data;
    if (typeof url === 'string' && url.startsWith('/') && !url.startsWith('//')) navigate(url);
  });
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch((error: unknown) => {
    // The app works without it: only the offline start and push are lost.
    console.warn('the service worker was not registered', error);
  });
}
