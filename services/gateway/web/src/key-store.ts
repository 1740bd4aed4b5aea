// The API key lives in this browser's localStorage, so a reload keeps the user signed in, and
// "Forget key" removes it. It is never put in a URL.
const KEY_ITEM = 'jarvis.apiKey';

function storage(): Storage | undefined {
  try {
    return window.localStorage;
  } catch {
    // Storage disabled (some private modes): the key then lasts only as long as the page.
    return undefined;
  }
}

export function loadApiKey(): string | undefined {
  return storage()?.getItem(KEY_ITEM) ?? undefined;
}

export function saveApiKey(key: string): void {
  storage()?.setItem(KEY_ITEM, key);
}

export function forgetApiKey(): void {
  storage()?.removeItem(KEY_ITEM);
}
