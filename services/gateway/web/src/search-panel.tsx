import type { MemorySearchResponse } from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { useApp } from './app-context';
import { ErrorNotice, StatusBadge } from './components';
import { formatDateTime } from './format';
import { describeDocumentHit } from './search-result';

export function SearchPanel() {
  const { client } = useApp();
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<MemorySearchResponse['results'] | undefined>();
  const [isSearching, setIsSearching] = useState(false);
  const [error, setError] = useState<string | undefined>();

  async function search(event: Event) {
    event.preventDefault();
    if (!query.trim()) return;
    setIsSearching(true);
    setError(undefined);
    try {
      const answer = await client.send<MemorySearchResponse>('POST', '/v1/memory/search', {
        query: query.trim(),
        limit: 20,
      });
      setResults(answer.results);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsSearching(false);
    }
  }

  return (
    <div class="panel">
      <form class="search-form" onSubmit={search}>
        <label for="memory-query" class="visually-hidden">
          Search your memory
        </label>
        <input
          id="memory-query"
          type="search"
          placeholder="What did we decide about…"
          value={query}
          onInput={(event) => setQuery(event.currentTarget.value)}
        />
        <button type="submit" class="primary" disabled={isSearching}>
          Search
        </button>
      </form>
      <ErrorNotice message={error} />
      {results && results.length === 0 ? <p class="empty">Nothing found.</p> : null}
      <ol class="cards" aria-label="Search results">
        {results?.map((result) => {
          const source = describeDocumentHit(result);
          return (
            <li key={`${result.kind}:${result.id}`} class="card">
              <p class="fact-meta">
                <StatusBadge value={result.kind} />
                {source ? <span class="result-source">{source}</span> : null}
                <span class="muted">score {result.score.toFixed(3)}</span>
                <span class="muted">{formatDateTime(result.createdAt)}</span>
              </p>
              <p class="result-text">{result.text}</p>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
