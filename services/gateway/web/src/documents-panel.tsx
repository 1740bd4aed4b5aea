import type {
  DocumentChunk,
  MemoryDocumentsGetResponse,
  MemoryDocumentsIngestResponse,
  MemoryDocumentsListResponse,
} from '@jarvis/contracts';
import { useRef, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading, MetaList } from './components';
import { formatDateTime } from './format';
import { useResource } from './use-resource';

// What the upload takes (POST /v1/memory/documents, multipart): the server sniffs the content
// and refuses what is not what its name says, so this list only narrows the file picker.
const UPLOAD_ACCEPT = [
  '.pdf',
  '.docx',
  '.txt',
  '.md',
  '.markdown',
  '.html',
  '.htm',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'text/plain',
  'text/markdown',
  'text/html',
].join(',');

type UploadState =
  | { phase: 'idle' }
  | { phase: 'sending'; share: number }
  // Every byte is sent; the server reads the document (a large PDF can take a while).
  | { phase: 'reading' }
  | { phase: 'failed'; message: string }
  | { phase: 'added'; message: string };

function describeAdded({ document }: MemoryDocumentsIngestResponse): string {
  const pages = document.pages === undefined ? '' : `${document.pages} pages, `;
  const chunks = `${document.chunks} ${document.chunks === 1 ? 'chunk' : 'chunks'}`;
  return `Added “${document.title}”: ${pages}${chunks}.`;
}

function UploadForm(props: { onUploaded: () => void }) {
  const { client } = useApp();
  const [file, setFile] = useState<File | undefined>();
  const [title, setTitle] = useState('');
  const [state, setState] = useState<UploadState>({ phase: 'idle' });
  const fileInput = useRef<HTMLInputElement>(null);
  const cancel = useRef<AbortController | undefined>(undefined);
  const isBusy = state.phase === 'sending' || state.phase === 'reading';

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!file || isBusy) return;
    const form = new FormData();
    // The title first: a server that streams the file sees it before the file's bytes.
    if (title.trim()) form.append('title', title.trim());
    form.append('file', file, file.name);
    const controller = new AbortController();
    cancel.current = controller;
    setState({ phase: 'sending', share: 0 });
    try {
      const added = await client.upload<MemoryDocumentsIngestResponse>(
        '/v1/memory/documents',
        form,
        {
          signal: controller.signal,
          onProgress: (share) =>
            setState(share >= 1 ? { phase: 'reading' } : { phase: 'sending', share }),
        },
      );
      setState({ phase: 'added', message: describeAdded(added) });
      setFile(undefined);
      setTitle('');
      if (fileInput.current) fileInput.current.value = '';
      props.onUploaded();
    } catch (failure) {
      const isCancelled = failure instanceof DOMException && failure.name === 'AbortError';
      setState(
        isCancelled
          ? { phase: 'idle' }
          : {
              phase: 'failed',
              message: failure instanceof Error ? failure.message : String(failure),
            },
      );
    } finally {
      cancel.current = undefined;
    }
  };

  return (
    <details class="card add" open>
      <summary>Upload a document</summary>
      <form onSubmit={(event) => void submit(event)} aria-label="Upload a document">
        <div class="form-grid">
          <div class="field">
            <label for="upload-file">File (PDF, DOCX, HTML, Markdown or text)</label>
            <input
              id="upload-file"
              ref={fileInput}
              type="file"
              accept={UPLOAD_ACCEPT}
              disabled={isBusy}
              onChange={(event) => {
                setFile(event.currentTarget.files?.[0]);
                if (!isBusy) setState({ phase: 'idle' });
              }}
            />
          </div>
          <div class="field">
            <label for="upload-title">Title (optional)</label>
            <input
              id="upload-title"
              type="text"
              maxLength={500}
              placeholder="The document's own, or its file name"
              value={title}
              disabled={isBusy}
              onInput={(event) => setTitle(event.currentTarget.value)}
            />
          </div>
        </div>
        {state.phase === 'sending' ? (
          <div class="upload-progress">
            <progress
              max={1}
              value={state.share}
              aria-label="Upload progress"
              aria-valuetext={`${Math.round(state.share * 100)}% sent`}
            />
            <span class="muted">Sending… {Math.round(state.share * 100)}%</span>
          </div>
        ) : null}
        {state.phase === 'reading' ? (
          <output class="muted loading">Reading the document…</output>
        ) : null}
        <ErrorNotice message={state.phase === 'failed' ? state.message : undefined} />
        {state.phase === 'added' ? <output class="notice notice-ok">{state.message}</output> : null}
        <div class="button-row">
          <button type="submit" class="primary" disabled={!file || isBusy}>
            {isBusy ? 'Uploading…' : 'Upload'}
          </button>
          {state.phase === 'sending' ? (
            <button type="button" onClick={() => cancel.current?.abort()}>
              Cancel
            </button>
          ) : null}
        </div>
      </form>
    </details>
  );
}

function DocumentDetail(props: { id: string; onDeleted: () => void }) {
  const { client } = useApp();
  const [more, setMore] = useState<DocumentChunk[]>([]);
  const [isTruncated, setIsTruncated] = useState<boolean | undefined>();
  const [error, setError] = useState<string | undefined>();
  const path = `/v1/memory/documents/${encodeURIComponent(props.id)}`;
  const first = useResource(props.id, () => client.get<MemoryDocumentsGetResponse>(path));
  const chunks = [...(first.data?.chunks ?? []), ...more];
  const hasMore = isTruncated ?? first.data?.isTruncated ?? false;

  const loadMore = async () => {
    const fromIndex = (chunks.at(-1)?.index ?? -1) + 1;
    try {
      const page = await client.get<MemoryDocumentsGetResponse>(withQuery(path, { fromIndex }));
      setMore((current) => [...current, ...page.chunks]);
      setIsTruncated(page.isTruncated);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };

  const remove = async () => {
    if (!window.confirm('Delete this document and all its chunks?')) return;
    try {
      await client.send('DELETE', path);
      props.onDeleted();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };

  if (!first.data) {
    return first.error ? <ErrorNotice message={first.error} /> : <Loading what="the document" />;
  }
  const { document } = first.data;
  return (
    <div class="detail">
      <MetaList
        items={[
          ['Type', document.contentType],
          ...(document.pages === undefined ? [] : [['Pages', document.pages] as [string, number]]),
          ['Source', document.source ?? '—'],
          ['Chunks', document.chunkCount],
          ['Added', formatDateTime(document.createdAt)],
        ]}
      />
      <ol class="chunks" aria-label="Chunks">
        {chunks.map((chunk) => (
          <li key={chunk.index}>
            <pre class="code">{chunk.content}</pre>
          </li>
        ))}
      </ol>
      <ErrorNotice message={error} />
      <div class="button-row">
        {hasMore ? (
          <button type="button" onClick={() => void loadMore()}>
            Show more
          </button>
        ) : null}
        <button type="button" class="danger" onClick={() => void remove()}>
          Delete document
        </button>
      </div>
    </div>
  );
}

export function DocumentsPanel() {
  const { client } = useApp();
  const [openId, setOpenId] = useState<string | undefined>();
  const list = useResource('documents', () =>
    client.get<MemoryDocumentsListResponse>('/v1/memory/documents?limit=200'),
  );

  return (
    <div class="panel">
      <UploadForm onUploaded={list.reload} />
      <ErrorNotice message={list.error} />
      {list.isLoading ? <Loading what="documents" /> : null}
      {list.data && list.data.documents.length === 0 ? (
        <p class="empty">No documents yet. Upload one, or add it with POST /v1/memory/documents.</p>
      ) : null}
      <ul class="cards" aria-label="Documents">
        {list.data?.documents.map((document) => (
          <li key={document.id} class="card">
            <button
              type="button"
              class="row-button"
              aria-expanded={openId === document.id}
              onClick={() => setOpenId(openId === document.id ? undefined : document.id)}
            >
              <span class="path">{document.title}</span>
              <span class="muted">
                {document.contentType} ·{' '}
                {document.pages === undefined ? '' : `${document.pages} pages · `}
                {document.sizeChars.toLocaleString('en')} characters ·{' '}
                {formatDateTime(document.createdAt)}
              </span>
            </button>
            {openId === document.id ? (
              <DocumentDetail
                id={document.id}
                onDeleted={() => {
                  setOpenId(undefined);
                  list.reload();
                }}
              />
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  );
}
