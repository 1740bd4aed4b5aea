// The pure parts of the service worker (sw.ts), apart so they can be unit-tested: reading a
// push message's payload and choosing where a tapped notification leads. Only sw.ts imports
// this file: a module the app imported too would become a chunk both share, and sw.js must
// stay one classic script (not every browser in use can start a module service worker).

export type PushNotice = {
  title: string;
  options: { body: string; tag?: string; data: { url: string } };
};

const DEFAULT_TITLE = 'Jarvis';
// The push service caps a payload near 4 KB; a notification shows a few lines of it anyway.
const MAX_TITLE = 120;
const MAX_BODY = 1000;

function textField(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.trim() ? value.trim().slice(0, max) : undefined;
}

// Keeps a notification's target on this install: a same-origin path (with its query and
// fragment), else the app's root. A payload naming another origin, or a javascript: URL,
// never becomes a window the user opened by tapping.
export function sameOriginPath(url: unknown, origin: string): string {
  if (typeof url !== 'string' || !url) return '/';
  let target: URL;
  try {
    target = new URL(url, origin);
  } catch {
    return '/';
  }
  if (target.origin !== origin) return '/';
  return `${target.pathname}${target.search}${target.hash}`;
}

// The tools service sends `{title, body, url, tag}` as JSON. Anything else (a bare text, a
// message with no payload) still shows a notification: a push subscribed with userVisibleOnly
// that shows none makes the browser show a generic one of its own.
export function noticeFromPush(payload: string | undefined, origin: string): PushNotice {
  let fields: Record<string, unknown> = {};
  if (payload) {
    try {
      const parsed: unknown = JSON.parse(payload);
      fields = typeof parsed === 'object' && parsed !== null ? { ...parsed } : { body: payload };
    } catch {
      fields = { body: payload };
    }
  }
  const tag = textField(fields.tag, 200);
  return {
    title: textField(fields.title, MAX_TITLE) ?? DEFAULT_TITLE,
    options: {
      body: textField(fields.body, MAX_BODY) ?? '',
      ...(tag ? { tag } : {}),
      data: { url: sameOriginPath(fields.url, origin) },
    },
  };
}
