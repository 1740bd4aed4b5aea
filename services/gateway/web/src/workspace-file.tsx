import type { ToolFile } from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { type ApiClient, ApiError } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { formatBytes } from './format';
import { createBlobCache, saveBlob, useObjectUrl } from './object-url';
import { fileNameOf, isInlineImage } from './workspace-files';

// A workspace file's address is reused when a later run writes the file again: the size is in
// the key, so a redraw shows the cached picture and a rewritten file of another size is fetched.
const imageCache = createBlobCache(40);

type KeptFile = ToolFile & { url: string };

function isKept(file: ToolFile): file is KeptFile {
  return file.url !== undefined;
}

function describeFailure(failure: unknown): string {
  if (failure instanceof ApiError && failure.status === 404) {
    return 'This file is no longer in the workspace.';
  }
  return failure instanceof Error ? failure.message : String(failure);
}

function fetchFile(client: ApiClient, url: string): Promise<Blob> {
  return client.open(url, {}).then((response) => response.blob());
}

// The blob is typed as the raster type the file was checked to have, whatever the bytes are: a
// run can write SVG into chart.png, and the full-size view opens the blob: URL as a page of this
// origin, where an SVG's script would run. As image/png it is only ever a picture.
function loadImage(client: ApiClient, file: KeptFile): Promise<Blob> {
  return imageCache.load(`${file.size} ${file.url}`, () =>
    fetchFile(client, file.url).then((blob) => blob.slice(0, blob.size, file.mediaType)),
  );
}

function WorkspaceImage(props: { file: KeptFile }) {
  const { client } = useApp();
  const { file } = props;
  const { url, error } = useObjectUrl(
    `${file.size} ${file.url}`,
    () => loadImage(client, file),
    describeFailure,
  );
  return (
    <figure class="workspace-image">
      {url ? (
        <a href={url} target="_blank" rel="noopener noreferrer" title="Open full size">
          <img src={url} alt={file.path} />
        </a>
      ) : error ? (
        <ErrorNotice message={error} />
      ) : (
        <Loading what={file.path} />
      )}
      <figcaption class="muted">
        {file.path} · {formatBytes(file.size)}
      </figcaption>
    </figure>
  );
}

// Fetches the file with the key and saves it: a plain link could not send the key.
export function DownloadButton(props: { url: string; path: string; label?: string }) {
  const { client } = useApp();
  const [state, setState] = useState<{ isBusy: boolean; error?: string }>({ isBusy: false });
  const download = async () => {
    setState({ isBusy: true });
    try {
      saveBlob(await fetchFile(client, props.url), fileNameOf(props.path));
      setState({ isBusy: false });
    } catch (failure) {
      setState({ isBusy: false, error: describeFailure(failure) });
    }
  };
  return (
    <>
      <button
        type="button"
        class="small"
        disabled={state.isBusy}
        aria-label={`Download ${props.path}`}
        onClick={() => void download()}
      >
        {state.isBusy ? 'Downloading…' : (props.label ?? 'Download')}
      </button>
      <ErrorNotice message={state.error} />
    </>
  );
}

// The files a tool run wrote: raster images shown, every other file (SVG and HTML too) a
// download; a file the workspace did not keep is named only.
export function ToolFiles(props: { files: readonly ToolFile[]; toolName: string }) {
  const images = props.files.filter(isKept).filter((file) => isInlineImage(file.mediaType));
  const others = props.files.filter((file) => !images.some((image) => image === file));
  return (
    <div class="tool-files">
      {images.map((file) => (
        <WorkspaceImage key={file.url} file={file} />
      ))}
      {others.length > 0 ? (
        <ul class="tool-file-list" aria-label={`Files from ${props.toolName}`}>
          {others.map((file) => (
            <li key={file.path}>
              <span class="path">{file.path}</span>{' '}
              <span class="muted">{formatBytes(file.size)}</span>{' '}
              {file.url ? (
                <DownloadButton url={file.url} path={file.path} />
              ) : (
                <span class="muted">not kept</span>
              )}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
