import type { ToolScreenshot } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { type ApiClient, ApiError } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';

// The API's own address of one screenshot, and nothing else: the path is fetched with the
// user's key, so a path that named another host (or another endpoint) would send the key there.
const SCREENSHOT_PATH =
  /^\/v1\/screenshots\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

// A screenshot as a tool step's output or a tool_finished event carries it (JSON from the
// server), checked before anything is fetched for it.
export function asScreenshot(value: unknown): ToolScreenshot | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (!('id' in value && 'path' in value && 'width' in value && 'height' in value)) {
    return undefined;
  }
  const { id, path, width, height } = value;
  if (typeof id !== 'string' || typeof path !== 'string') return undefined;
  if (!SCREENSHOT_PATH.test(path) || path !== `/v1/screenshots/${id}`) return undefined;
  if (!isPositiveInteger(width) || !isPositiveInteger(height)) return undefined;
  return { id, path, width, height };
}

// Screenshots fetched this session, by path. The endpoint lets no cache keep them (a page may
// show private data), so this one, in memory only, spares a second download when the chat
// redraws or a run is opened again. Bounded: the oldest goes first.
const CACHE_MAX = 40;
const cache = new Map<string, Promise<Blob>>();

function loadScreenshot(client: ApiClient, path: string): Promise<Blob> {
  const cached = cache.get(path);
  if (cached) return cached;
  const loading = client
    .open(path, { headers: { accept: 'image/png' } })
    .then((response) => response.blob());
  // A failure is not kept: the next view asks again.
  loading.catch(() => cache.delete(path));
  cache.set(path, loading);
  if (cache.size > CACHE_MAX) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  return loading;
}

function describeFailure(failure: unknown): string {
  if (failure instanceof ApiError && failure.status === 404) {
    return 'This screenshot is no longer kept.';
  }
  return failure instanceof Error ? failure.message : String(failure);
}

// An <img> cannot send the key, so the PNG is fetched with it and shown through an object URL
// (the page's policy allows blob: images, which only this page can make). The URL is revoked
// when the picture leaves the page.
export function Screenshot(props: { shot: ToolScreenshot; label: string }) {
  const { client } = useApp();
  const { shot } = props;
  const [url, setUrl] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    let isCurrent = true;
    let objectUrl: string | undefined;
    setUrl(undefined);
    setError(undefined);
    loadScreenshot(client, shot.path).then(
      (blob) => {
        if (!isCurrent) return;
        objectUrl = URL.createObjectURL(blob);
        setUrl(objectUrl);
      },
      (failure: unknown) => {
        if (isCurrent) setError(describeFailure(failure));
      },
    );
    return () => {
      isCurrent = false;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [client, shot.path]);

  return (
    <figure class="screenshot">
      {url ? (
        <a href={url} target="_blank" rel="noopener noreferrer" title="Open full size">
          <img src={url} alt={props.label} width={shot.width} height={shot.height} />
        </a>
      ) : error ? (
        <ErrorNotice message={error} />
      ) : (
        <Loading what="the screenshot" />
      )}
      <figcaption class="muted">
        {props.label} · {shot.width}×{shot.height}
      </figcaption>
    </figure>
  );
}
