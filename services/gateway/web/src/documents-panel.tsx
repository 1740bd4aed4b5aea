import type {
  DocumentChunk,
  MemoryDocumentsGetResponse,
  MemoryDocumentsListResponse,
} from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading, MetaList } from './components';
import { formatDateTime } from './format';
import { useResource } from './use-resource';

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
      <ErrorNotice message={list.error} />
      {list.isLoading ? <Loading what="documents" /> : null}
      {list.data && list.data.documents.length === 0 ? (
        <p class="empty">No documents yet. Add them with POST /v1/memory/documents.</p>
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
                {document.contentType} · {document.sizeChars.toLocaleString('en')} characters ·{' '}
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
