import type { ToolsWorkspacesListResponse, WorkspaceFile, WorkspaceKind } from '@jarvis/contracts';
import { useRef, useState } from 'preact/hooks';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { formatBytes, formatDateTime } from './format';
import { useResource } from './use-resource';
import { DownloadButton } from './workspace-file';
import { workspaceFilePath, workspaceFilesPath } from './workspace-files';

type UploadState =
  | { phase: 'idle' }
  | { phase: 'sending'; share: number }
  | { phase: 'failed'; message: string };

function messageOf(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

// The file's own bytes as the body of PUT …/files/{name}: its type as the browser knows it, or
// none, and the server goes by the name's extension.
function UploadForm(props: {
  kind: WorkspaceKind;
  id: string;
  files: WorkspaceFile[];
  onUploaded: () => void;
}) {
  const { client } = useApp();
  const [file, setFile] = useState<File | undefined>();
  const [state, setState] = useState<UploadState>({ phase: 'idle' });
  const fileInput = useRef<HTMLInputElement>(null);
  const isBusy = state.phase === 'sending';
  const inputId = `workspace-upload-${props.kind}`;

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file || isBusy) return;
    const isReplacing = props.files.some((each) => each.path === file.name);
    if (isReplacing && !window.confirm(`Replace ${file.name} in the workspace?`)) return;
    setState({ phase: 'sending', share: 0 });
    try {
      await client.upload(workspaceFilePath(props.kind, props.id, file.name), file, {
        method: 'PUT',
        contentType: file.type || 'application/octet-stream',
        onProgress: (share) => setState({ phase: 'sending', share }),
      });
      setState({ phase: 'idle' });
      setFile(undefined);
      if (fileInput.current) fileInput.current.value = '';
      props.onUploaded();
    } catch (failure) {
      setState({ phase: 'failed', message: messageOf(failure) });
    }
  };

  return (
    <form
      class="workspace-upload"
      aria-label="Upload to the workspace"
      onSubmit={(event) => void submit(event)}
    >
      <div class="field">
        <label for={inputId}>Add a file</label>
        <input
          id={inputId}
          ref={fileInput}
          type="file"
          disabled={isBusy}
          onChange={(event) => {
            setFile(event.currentTarget.files?.[0]);
            setState({ phase: 'idle' });
          }}
        />
      </div>
      <button type="submit" class="primary" disabled={!file || isBusy}>
        {isBusy ? `Uploading… ${Math.round(state.share * 100)}%` : 'Upload'}
      </button>
      <ErrorNotice message={state.phase === 'failed' ? state.message : undefined} />
    </form>
  );
}

function FileRow(props: {
  kind: WorkspaceKind;
  id: string;
  file: WorkspaceFile;
  onDeleted: () => void;
}) {
  const { client } = useApp();
  const { file } = props;
  const [error, setError] = useState<string | undefined>();
  const url = workspaceFilePath(props.kind, props.id, file.path);

  const remove = async () => {
    if (!window.confirm(`Delete ${file.path} from the workspace? It cannot be restored.`)) return;
    try {
      await client.send('DELETE', url);
      props.onDeleted();
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  return (
    <li class="workspace-file">
      <span class="path">{file.path}</span>
      <span class="muted">
        {formatBytes(file.size)} · {formatDateTime(file.updatedAt)}
      </span>
      <span class="workspace-file-actions">
        <DownloadButton url={url} path={file.path} />
        <button
          type="button"
          class="small danger"
          aria-label={`Delete ${file.path}`}
          onClick={() => void remove()}
        >
          Delete
        </button>
      </span>
      <ErrorNotice message={error} />
    </li>
  );
}

function WorkspaceFiles(props: { kind: WorkspaceKind; id: string; version: number }) {
  const { client } = useApp();
  const { kind, id } = props;
  const listing = useResource(`${kind}:${id}:${props.version}`, () =>
    client.get<ToolsWorkspacesListResponse>(workspaceFilesPath(kind, id)),
  );
  const data = listing.data;
  return (
    <div class="workspace-body">
      <ErrorNotice message={listing.error} />
      {!data && listing.isLoading ? <Loading what="the files" /> : null}
      {data ? (
        <>
          <p class="workspace-usage">
            <meter
              min={0}
              max={data.quotaBytes}
              value={data.usedBytes}
              aria-label="Workspace storage used"
            />
            <span class="muted">
              {formatBytes(data.usedBytes)} of {formatBytes(data.quotaBytes)} used, across all your
              workspaces
            </span>
          </p>
          {data.files.length === 0 ? (
            <p class="empty">
              No files yet. What Jarvis's code writes, and what you upload, is kept here.
            </p>
          ) : null}
          <ul class="workspace-files" aria-label="Workspace files">
            {data.files.map((file) => (
              <FileRow key={file.path} kind={kind} id={id} file={file} onDeleted={listing.reload} />
            ))}
          </ul>
          <UploadForm kind={kind} id={id} files={data.files} onUploaded={listing.reload} />
        </>
      ) : null}
    </div>
  );
}

// The files of a conversation's or a mission's workspace, read when the panel is first opened
// and again whenever `version` changes (the caller's sign that a run may have written some).
export function WorkspacePanel(props: {
  kind: WorkspaceKind;
  id: string;
  title: string;
  isOpenAtFirst?: boolean;
  version?: number;
}) {
  const [isOpen, setIsOpen] = useState(props.isOpenAtFirst ?? false);
  return (
    <details
      class="card workspace"
      open={isOpen}
      onToggle={(event) => setIsOpen(event.currentTarget.open)}
    >
      <summary>{props.title}</summary>
      {isOpen ? (
        <WorkspaceFiles kind={props.kind} id={props.id} version={props.version ?? 0} />
      ) : null}
    </details>
  );
}
