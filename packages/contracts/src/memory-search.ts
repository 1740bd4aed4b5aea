import { z } from 'zod';
import { Id, Timestamp } from './common';
import { defineRpc } from './define';

export const MemoryKind = z.enum(['message', 'fact', 'summary', 'file', 'document']);
export type MemoryKind = z.infer<typeof MemoryKind>;

export const SEARCH_MAX_LIMIT = 100;

// What the user (or the agent) may ask for; the gateway adds the user id from the key.
export const SearchQuery = z.strictObject({
  query: z.string().trim().min(1, 'query must not be empty').max(2_000),
  limit: z.number().int().min(1).max(SEARCH_MAX_LIMIT).default(10),
  kinds: z.array(MemoryKind).min(1).optional(),
  conversationId: Id.optional(),
  from: Timestamp.optional(),
  to: Timestamp.optional(),
});
export type SearchQuery = z.input<typeof SearchQuery>;

export const MemorySearchRequest = SearchQuery.extend({ userId: Id });
export type MemorySearchRequest = z.input<typeof MemorySearchRequest>;

export const SearchResult = z.object({
  kind: MemoryKind,
  id: Id,
  score: z.number(),
  text: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.iso.datetime({ offset: true }),
  conversationId: Id.nullable(),
});
export type SearchResult = z.infer<typeof SearchResult>;

export const MemorySearchResponse = z.object({ results: z.array(SearchResult) });
export type MemorySearchResponse = z.infer<typeof MemorySearchResponse>;

export const memorySearch = defineRpc('memory.search', MemorySearchRequest, MemorySearchResponse);
