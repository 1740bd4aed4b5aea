import type {
  Extraction,
  ExtractionOp,
  MemoryExtractionsListResponse,
  MemoryExtractionsUndoResponse,
} from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading, StatusBadge } from './components';
import { formatDateTime } from './format';

const PAGE = 20;
const OP_LABELS: Record<ExtractionOp, string> = {
  add: 'added',
  update: 'updated',
  invalidate: 'invalidated',
  noop: 'already known',
};

function errorText(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

function ExtractionItem(props: { extraction: Extraction; onUndone: (next: Extraction) => void }) {
  const { client } = useApp();
  const { extraction } = props;
  const [isBusy, setIsBusy] = useState(false);
  const [isJustUndone, setIsJustUndone] = useState(false);
  const [error, setError] = useState<string | undefined>();
  // A turn that only met facts already known changed nothing: there is nothing to undo.
  const isUndoable =
    extraction.undoneAt === null && extraction.changes.some((change) => change.op !== 'noop');

  async function undo() {
    setIsBusy(true);
    setError(undefined);
    try {
      const answer = await client.send<MemoryExtractionsUndoResponse>(
        'POST',
        `/v1/memory/extractions/${encodeURIComponent(extraction.id)}/undo`,
      );
      props.onUndone(answer.extraction);
      setIsJustUndone(true);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsBusy(false);
    }
  }

  return (
    <li class="card" aria-busy={isBusy}>
      <p class="fact-meta">
        <span class="muted">{formatDateTime(extraction.createdAt)}</span>
        {extraction.undoneAt ? (
          <StatusBadge value="undone" label={`undone ${formatDateTime(extraction.undoneAt)}`} />
        ) : null}
      </p>
      <ul class="plain learned-changes">
        {extraction.changes.map((change, index) => (
          <li key={`${change.factId}-${index}`}>
            <StatusBadge value={change.op} label={OP_LABELS[change.op]} />{' '}
            <span class={extraction.undoneAt ? 'learned-undone' : undefined}>{change.text}</span>
          </li>
        ))}
      </ul>
      {isUndoable ? (
        <div class="button-row">
          <button type="button" disabled={isBusy} onClick={() => void undo()}>
            Undo
          </button>
        </div>
      ) : null}
      {isJustUndone ? (
        <output class="muted">Undone: memory is as it was before these changes.</output>
      ) : null}
      <ErrorNotice message={error} />
    </li>
  );
}

// What Jarvis learned from each turn, newest first, and the one-click undo of a wrong change.
export function LearnedPanel() {
  const { client } = useApp();
  const [extractions, setExtractions] = useState<Extraction[]>([]);
  const [nextBefore, setNextBefore] = useState<string | undefined>();
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<string | undefined>();

  async function load(before?: string) {
    setIsLoading(true);
    setError(undefined);
    try {
      const page = await client.get<MemoryExtractionsListResponse>(
        withQuery('/v1/memory/extractions', { limit: PAGE, before }),
      );
      setExtractions((current) => (before ? [...current, ...page.extractions] : page.extractions));
      setNextBefore(page.nextBefore);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsLoading(false);
    }
  }

  useEffect(() => {
    void load();
  }, []);

  return (
    <div class="panel">
      <p class="muted">
        Facts Jarvis took from your conversations, turn by turn. Undo a wrong change and memory is
        as it was before it.
      </p>
      <ErrorNotice message={error} />
      {!isLoading && extractions.length === 0 && !error ? (
        <p class="empty">Nothing learned yet.</p>
      ) : null}
      <ul class="cards" aria-label="Learned">
        {extractions.map((extraction) => (
          <ExtractionItem
            key={extraction.id}
            extraction={extraction}
            onUndone={(next) =>
              setExtractions((current) =>
                current.map((item) => (item.id === next.id ? next : item)),
              )
            }
          />
        ))}
      </ul>
      {isLoading ? <Loading what="what Jarvis learned" /> : null}
      {nextBefore && !isLoading ? (
        <button type="button" onClick={() => void load(nextBefore)}>
          Load more
        </button>
      ) : null}
    </div>
  );
}
