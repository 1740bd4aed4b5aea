import type { Fact, FactCategory, MemoryFactsGetResponse } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, StatusBadge } from './components';
import { formatDateTime } from './format';

const PAGE = 50;
const CATEGORIES: FactCategory[] = [
  'fact',
  'preference',
  'decision',
  'insight',
  'reminder',
  'profile',
  'rule',
];

type FactDraft = { content: string; category: FactCategory; importance: number; tags: string };

function toDraft(fact: Fact): FactDraft {
  return {
    content: fact.content,
    category: fact.category,
    importance: fact.importance,
    tags: fact.tags.join(', '),
  };
}

function parseTags(text: string): string[] {
  return text
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean);
}

function isCategory(value: string): value is FactCategory {
  return CATEGORIES.some((category) => category === value);
}

// The fields of a fact as a form; `idPrefix` keeps label/input pairs unique on the page.
function FactFields(props: {
  idPrefix: string;
  draft: FactDraft;
  onChange: (draft: FactDraft) => void;
}) {
  const { idPrefix, draft, onChange } = props;
  return (
    <div class="form-grid">
      <div class="field field-wide">
        <label for={`${idPrefix}-content`}>Fact</label>
        <textarea
          id={`${idPrefix}-content`}
          rows={3}
          value={draft.content}
          onInput={(event) => onChange({ ...draft, content: event.currentTarget.value })}
          required
        />
      </div>
      <div class="field">
        <label for={`${idPrefix}-category`}>Category</label>
        <select
          id={`${idPrefix}-category`}
          value={draft.category}
          onChange={(event) => {
            const value = event.currentTarget.value;
            if (isCategory(value)) onChange({ ...draft, category: value });
          }}
        >
          {CATEGORIES.map((category) => (
            <option key={category} value={category}>
              {category}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for={`${idPrefix}-importance`}>Importance (1–10)</label>
        <input
          id={`${idPrefix}-importance`}
          type="number"
          min={1}
          max={10}
          value={draft.importance}
          onInput={(event) =>
            onChange({ ...draft, importance: Number(event.currentTarget.value) || 1 })
          }
        />
      </div>
      <div class="field field-wide">
        <label for={`${idPrefix}-tags`}>Tags (comma-separated)</label>
        <input
          id={`${idPrefix}-tags`}
          value={draft.tags}
          onInput={(event) => onChange({ ...draft, tags: event.currentTarget.value })}
        />
      </div>
    </div>
  );
}

function FactItem(props: { fact: Fact; onChanged: (next: Fact | undefined) => void }) {
  const { client } = useApp();
  const { fact } = props;
  const [draft, setDraft] = useState<FactDraft | undefined>();
  const [history, setHistory] = useState<MemoryFactsGetResponse | undefined>();
  const [isHistoryOpen, setIsHistoryOpen] = useState(false);
  const [isBusy, setIsBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const isValid = fact.validTo === null;

  async function run(action: () => Promise<void>) {
    setIsBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsBusy(false);
    }
  }

  const save = (event: Event) => {
    event.preventDefault();
    if (!draft) return;
    void run(async () => {
      const before = toDraft(fact);
      const tags = parseTags(draft.tags);
      // Only what changed: a PATCH with no change is refused, and a change makes a new version.
      const change = {
        ...(draft.content.trim() !== before.content ? { content: draft.content.trim() } : {}),
        ...(draft.category !== before.category ? { category: draft.category } : {}),
        ...(draft.importance !== before.importance ? { importance: draft.importance } : {}),
        ...(tags.join(',') !== fact.tags.join(',') ? { tags } : {}),
      };
      if (Object.keys(change).length > 0) {
        const { fact: next } = await client.send<{ fact: Fact }>(
          'PATCH',
          `/v1/memory/facts/${fact.id}`,
          change,
        );
        props.onChanged(next);
      }
      setDraft(undefined);
      setHistory(undefined);
    });
  };

  const forget = () => {
    if (!window.confirm(`Forget this fact?\n\n${fact.content}`)) return;
    void run(async () => {
      await client.send('DELETE', `/v1/memory/facts/${fact.id}`);
      props.onChanged(undefined);
    });
  };

  const toggleHistory = () => {
    if (isHistoryOpen) {
      setIsHistoryOpen(false);
      return;
    }
    setIsHistoryOpen(true);
    if (!history) {
      void run(async () => {
        setHistory(await client.get<MemoryFactsGetResponse>(`/v1/memory/facts/${fact.id}`));
      });
    }
  };

  const state = fact.supersededBy ? 'replaced' : isValid ? undefined : 'forgotten';
  return (
    <li class="card fact" aria-busy={isBusy}>
      {draft ? (
        <form onSubmit={save} aria-label="Edit fact">
          <FactFields idPrefix={`edit-${fact.id}`} draft={draft} onChange={setDraft} />
          <div class="button-row">
            <button type="submit" class="primary" disabled={isBusy}>
              Save
            </button>
            <button type="button" onClick={() => setDraft(undefined)}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <>
          <p class="fact-content">{fact.content}</p>
          <p class="fact-meta">
            <StatusBadge value={fact.category} />
            <span>importance {fact.importance}</span>
            {fact.tags.map((tag) => (
              <span key={tag} class="tag">
                #{tag}
              </span>
            ))}
            {state ? <StatusBadge value={state} /> : null}
            <span class="muted">{formatDateTime(fact.validFrom)}</span>
          </p>
          <div class="button-row">
            {isValid ? (
              <button type="button" onClick={() => setDraft(toDraft(fact))}>
                Edit
              </button>
            ) : null}
            <button type="button" aria-expanded={isHistoryOpen} onClick={toggleHistory}>
              History
            </button>
            {isValid ? (
              <button type="button" class="danger" onClick={forget} disabled={isBusy}>
                Delete
              </button>
            ) : null}
          </div>
        </>
      )}
      <ErrorNotice message={error} />
      {isHistoryOpen && history ? (
        <div class="history">
          <h3>Earlier versions</h3>
          {history.history.length === 0 ? (
            <p class="muted">None: this is the first version.</p>
          ) : (
            <ol class="plain">
              {history.history.map((version) => (
                <li key={version.id}>
                  <span class="history-content">{version.content}</span>{' '}
                  <span class="muted">
                    {formatDateTime(version.validFrom)} – {formatDateTime(version.validTo)}
                  </span>
                </li>
              ))}
            </ol>
          )}
          {history.isHistoryTruncated ? <p class="muted">Older versions are not shown.</p> : null}
        </div>
      ) : null}
    </li>
  );
}

function AddFact(props: { onAdded: (fact: Fact) => void }) {
  const { client } = useApp();
  const empty: FactDraft = { content: '', category: 'fact', importance: 5, tags: '' };
  const [draft, setDraft] = useState(empty);
  const [error, setError] = useState<string | undefined>();

  async function submit(event: Event) {
    event.preventDefault();
    setError(undefined);
    try {
      const { fact } = await client.send<{ fact: Fact }>('POST', '/v1/memory/facts', {
        content: draft.content,
        category: draft.category,
        importance: draft.importance,
        tags: parseTags(draft.tags),
      });
      props.onAdded(fact);
      setDraft(empty);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  }

  return (
    <details class="card add">
      <summary>Add a fact</summary>
      <form onSubmit={submit}>
        <FactFields idPrefix="new-fact" draft={draft} onChange={setDraft} />
        <ErrorNotice message={error} />
        <button type="submit" class="primary">
          Remember
        </button>
      </form>
    </details>
  );
}

export function FactsPanel() {
  const { client } = useApp();
  const [facts, setFacts] = useState<Fact[]>([]);
  const [showForgotten, setShowForgotten] = useState(false);
  const [hasMore, setHasMore] = useState(false);
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<string | undefined>();

  async function load(before?: string) {
    setIsLoading(true);
    setError(undefined);
    try {
      const page = await client.get<{ facts: Fact[] }>(
        withQuery('/v1/memory/facts', {
          limit: PAGE,
          before,
          includeInvalid: showForgotten ? 'true' : undefined,
        }),
      );
      setFacts((current) => (before ? [...current, ...page.facts] : page.facts));
      setHasMore(page.facts.length === PAGE);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsLoading(false);
    }
  }

  // Reloads from the first page when the filter changes.
  useEffect(() => {
    void load();
  }, [showForgotten]);

  return (
    <div class="panel">
      <div class="toolbar">
        <label class="check">
          <input
            type="checkbox"
            checked={showForgotten}
            onChange={(event) => setShowForgotten(event.currentTarget.checked)}
          />
          Show forgotten and replaced facts
        </label>
      </div>
      <AddFact onAdded={(fact) => setFacts((current) => [fact, ...current])} />
      <ErrorNotice message={error} />
      {!isLoading && facts.length === 0 && !error ? (
        <p class="empty">No facts yet. Jarvis learns them as you talk, or add one above.</p>
      ) : null}
      <ul class="cards" aria-label="Facts">
        {facts.map((fact, index) => (
          <FactItem
            key={fact.id}
            fact={fact}
            onChanged={(next) =>
              setFacts((current) =>
                next
                  ? current.map((item, at) => (at === index ? next : item))
                  : current.filter((item) => item.id !== fact.id),
              )
            }
          />
        ))}
      </ul>
      {isLoading ? <p class="muted">Loading facts…</p> : null}
      {hasMore && !isLoading ? (
        <button type="button" onClick={() => void load(facts.at(-1)?.createdAt)}>
          Load more
        </button>
      ) : null}
    </div>
  );
}
