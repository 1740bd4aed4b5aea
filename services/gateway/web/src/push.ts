import type {
  PushKeyResponse,
  PushSubscriptionBody,
  PushSubscriptionResponse,
  PushSubscriptionView,
} from '@jarvis/contracts';
import { type ApiClient, ApiError } from './api-client';

// This device's side of Web Push: the browser's push subscription (made through the service
// worker, /sw.js, which also shows the notifications) and its record at the gateway
// (GET /v1/notifications/push/key, POST and DELETE /v1/notifications/push/subscriptions).

// The id the gateway gave this device's subscription: the list the API returns names the push
// service's host, not the endpoint, so this is how the Settings page knows which row is "this
// device" and what to delete when it unsubscribes.
const SUBSCRIPTION_ITEM = 'jarvis.pushSubscriptionId';

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    return undefined;
  }
}

// Push needs a service worker, the Push API, notifications and a secure context (HTTPS with a
// certificate the browser trusts, or localhost): a browser on plain http:// to another host
// has none of them, and Safari on iOS only in an app added to the home screen.
export function isPushSupported(): boolean {
  return (
    typeof window !== 'undefined' &&
    window.isSecureContext &&
    'serviceWorker' in navigator &&
    'PushManager' in window &&
    'Notification' in window
  );
}

// The id of this device's subscription at the gateway, if this browser made one.
export function thisDeviceSubscriptionId(): string | undefined {
  return storage()?.getItem(SUBSCRIPTION_ITEM) ?? undefined;
}

// The VAPID public key comes base64url-encoded; the Push API takes its raw bytes.
export function decodeBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const padded = base64 + '='.repeat((4 - (base64.length % 4)) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

function isSameKey(current: ArrayBuffer | null, wanted: Uint8Array): boolean {
  if (!current) return false;
  const bytes = new Uint8Array(current);
  return bytes.length === wanted.length && bytes.every((byte, index) => byte === wanted[index]);
}

async function registration(): Promise<ServiceWorkerRegistration> {
  // main.tsx registers /sw.js at start; `ready` waits for it to be active, and never settles
  // when nothing was registered, so register here too (the same URL is a no-op).
  await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  return navigator.serviceWorker.ready;
}

// Subscribes this browser to push and records the subscription at the gateway under
// `deviceName`. Call it from a click: the browser asks the user's permission, and refuses
// (NotAllowedError) a prompt nobody asked for. Throws when push is not supported, the user
// says no, or the gateway refuses the endpoint.
export async function subscribeThisDevice(
  client: ApiClient,
  deviceName: string,
): Promise<PushSubscriptionView> {
  if (!isPushSupported()) {
    throw new Error('This browser cannot receive push notifications here (it needs HTTPS).');
  }
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') {
    throw new Error('Notifications are blocked for this site: allow them in the browser first.');
  }
  const { publicKey } = await client.get<PushKeyResponse>('/v1/notifications/push/key');
  const applicationServerKey = decodeBase64Url(publicKey);
  const worker = await registration();
  let subscription = await worker.pushManager.getSubscription();
  // A subscription made under another key (the install's keys were replaced, or another
  // install on this origin) would be refused by the push service at every send.
  if (subscription && !isSameKey(subscription.options.applicationServerKey, applicationServerKey)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await worker.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey,
  });
  const { endpoint, keys } = subscription.toJSON();
  if (!endpoint || !keys?.p256dh || !keys.auth) {
    throw new Error('The browser gave a push subscription without its endpoint or keys.');
  }
  const name = deviceName.trim();
  const body: PushSubscriptionBody = {
    endpoint,
    keys: { p256dh: keys.p256dh, auth: keys.auth },
    ...(name ? { deviceName: name } : {}),
  };
  const response = await client.send<PushSubscriptionResponse>(
    'POST',
    '/v1/notifications/push/subscriptions',
    body,
  );
  storage()?.setItem(SUBSCRIPTION_ITEM, response.subscription.id);
  return response.subscription;
}

// Removes this device's subscription at the gateway (a 404: it was already removed, e.g. the
// push service answered 410 to a send) and in the browser.
export async function unsubscribeThisDevice(client: ApiClient): Promise<void> {
  const id = thisDeviceSubscriptionId();
  if (id) {
    try {
      await client.send('DELETE', `/v1/notifications/push/subscriptions/${encodeURIComponent(id)}`);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
    storage()?.removeItem(SUBSCRIPTION_ITEM);
  }
  if (!isPushSupported()) return;
  const worker = await navigator.serviceWorker.getRegistration('/');
  const subscription = await worker?.pushManager.getSubscription();
  await subscription?.unsubscribe();
}
