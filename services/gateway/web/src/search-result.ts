import type { MemorySearchResponse } from '@jarvis/contracts';

type SearchResult = MemorySearchResponse['results'][number];

// Where a document hit was read: its document's title, and for a PDF the page the passage begins
// on ("Boiler manual, page 3"); undefined for any other kind. Metadata is memory's JSON, so each
// field is checked rather than trusted.
export function describeDocumentHit(result: SearchResult): string | undefined {
  if (result.kind !== 'document') return undefined;
  const { title, page } = result.metadata;
  if (typeof title !== 'string') return undefined;
  return typeof page === 'number' ? `${title}, page ${page}` : title;
}
