import type { ToolScreenshot } from '@jarvis/contracts';
import { type ApiClient, ApiError } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { createBlobCache, useObjectUrl } from './object-url';

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

// Screenshot ids are never reused: a cached PNG is never stale.
const cache = createBlobCache(40);

function loadScreenshot(client: ApiClient, path: string): Promise<Blob> {
  return cache.load(path, () =>
    client.open(path, { headers: { accept: 'image/png' } }).then((response) => response.blob()),
  );
}

function describeFailure(failure: unknown): string {
  if (failure instanceof ApiError && failure.status === 404) {
    return 'This screenshot is no longer kept.';
  }
  return failure instanceof Error ? failure.message : String(failure);
}

export function Screenshot(props: { shot: ToolScreenshot; label: string }) {
  const { client } = useApp();
  const { shot } = props;
  const { url, error } = useObjectUrl(
    shot.path,
    () => loadScreenshot(client, shot.path),
    describeFailure,
  );

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
