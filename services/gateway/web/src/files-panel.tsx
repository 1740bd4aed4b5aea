import type {
  MemoryFilesHistoryResponse,
  MemoryFilesListResponse,
  MemoryFilesReadResponse,
} from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading, MetaList } from './components';
import { formatBytes, formatDateTime } from './format';
import { useResource } from './use-resource';

function FileDetail(props: { path: string; onDeleted: () => void }) {
  const { client } = useApp();
  const [error, setError] = useState<string | undefined>();
  const query = { path: props.path };
  const file = useResource(props.path, () =>
    client.get<MemoryFilesReadResponse>(withQuery('/v1/memory/files/content', query)),
  );
  const history = useResource(props.path, () =>
    client.get<MemoryFilesHistoryResponse>(withQuery('/v1/memory/files/history', query)),
  );

  const remove = async () => {
    if (!window.confirm(`Delete ${props.path}? Its earlier versions are kept.`)) return;
    try {
      await client.send('DELETE', withQuery('/v1/memory/files/content', query));
      props.onDeleted();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };

  return (
    <div class="detail">
      <ErrorNotice message={file.error ?? error} />
      {file.data ? (
        <>
          <MetaList
            items={[
              ['Version', file.data.file.version],
              ['Size', formatBytes(file.data.file.size)],
              ['Updated', formatDateTime(file.data.file.updatedAt)],
            ]}
          />
          <pre class="code file-content">{file.data.file.content}</pre>
        </>
      ) : (
        <Loading what="the file" />
      )}
      {history.data && history.data.versions.length > 1 ? (
        <details>
          <summary>{history.data.versions.length} versions</summary>
          <ol class="plain">
            {history.data.versions.map((version) => (
              <li key={version.version}>
                v{version.version} · {formatBytes(version.size)} ·{' '}
                {formatDateTime(version.createdAt)}
                {version.isCurrent ? ' (current)' : ''}
              </li>
            ))}
          </ol>
        </details>
      ) : null}
      <div class="button-row">
        <button type="button" class="danger" onClick={() => void remove()}>
          Delete file
        </button>
      </div>
    </div>
  );
}

export function FilesPanel() {
  const { client } = useApp();
  const [prefix, setPrefix] = useState('');
  const [openPath, setOpenPath] = useState<string | undefined>();
  const list = useResource(`files:${prefix}`, () =>
    client.get<MemoryFilesListResponse>(withQuery('/v1/memory/files', { prefix })),
  );

  return (
    <div class="panel">
      <div class="toolbar">
        <div class="field">
          <label for="files-prefix">Folder</label>
          <input
            id="files-prefix"
            placeholder="e.g. episodes/"
            value={prefix}
            onChange={(event) => setPrefix(event.currentTarget.value.trim())}
          />
        </div>
      </div>
      <ErrorNotice message={list.error} />
      {list.isLoading ? <Loading what="files" /> : null}
      {list.data && list.data.files.length === 0 ? (
        <p class="empty">No memory files{prefix ? ` under ${prefix}` : ''}.</p>
      ) : null}
      <ul class="cards" aria-label="Memory files">
        {list.data?.files.map((file) => (
          <li key={file.path} class="card">
            <button
              type="button"
              class="row-button"
              aria-expanded={openPath === file.path}
              onClick={() => setOpenPath(openPath === file.path ? undefined : file.path)}
            >
              <span class="path">{file.path}</span>
              <span class="muted">
                {formatBytes(file.size)} · v{file.version} · {formatDateTime(file.updatedAt)}
              </span>
            </button>
            {openPath === file.path ? (
              <FileDetail
                path={file.path}
                onDeleted={() => {
                  setOpenPath(undefined);
                  list.reload();
                }}
              />
            ) : null}
          </li>
        ))}
      </ul>
      {list.data?.isTruncated ? (
        <p class="muted">More files exist: narrow the folder to see them.</p>
      ) : null}
    </div>
  );
}
