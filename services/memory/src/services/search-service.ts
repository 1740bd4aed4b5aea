import { MemoryKind, type MemorySearchRequest, type MemorySearchResponse } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  embedQuery,
  expandQuery,
  inverseDocumentFrequency,
  LOCAL_EMBEDDING_MODEL,
  toTerms,
} from '@jarvis/embeddings';
import type { z } from 'zod';
import { findNearest, loadVectors, scoreItems } from '../repositories/embeddings-repository';
import {
  type ItemDetails,
  loadMessages,
  searchMessageText,
} from '../repositories/search-repository';
import { loadTermCounts } from '../repositories/term-stats-repository';
import { parseDateRange } from './query-dates';

type SearchRequest = z.output<typeof MemorySearchRequest>;

// Candidates each ranker contributes before fusion.
const CANDIDATES = 100;
// Rocchio feedback from the best first-pass matches.
const FEEDBACK_DOCUMENTS = 3;
const FEEDBACK_WEIGHT = 0.5;
// Share of an adjacent message's score a message inherits: an answer is often one turn away.
const NEIGHBOUR_WEIGHT = 0.2;
// Reciprocal rank fusion: the usual constant, and the full-text ranker's weight. Postgres ranks
// ignore term rarity, so they break ties rather than lead (0.1 measured best on LoCoMo).
const RRF_K = 60;
const TEXT_WEIGHT = 0.1;
// Newer items win ties: a boost that halves every 90 days, at most 5 %.
const RECENCY_BOOST = 0.05;
const RECENCY_HALF_LIFE_DAYS = 90;

export async function searchMemory(
  pool: Pool,
  request: SearchRequest,
  now = new Date(),
): Promise<MemorySearchResponse> {
  const kinds = request.kinds ?? MemoryKind.options;
  const range = narrowRange(request, now);
  const filter = {
    userId: request.userId,
    conversationId: request.conversationId,
    from: range.from,
    to: range.to,
  };
  const terms = [...new Set(toTerms(request.query))];
  const stats = await loadTermCounts(pool, request.userId, terms);
  const documents = Math.max(stats.items, 1);
  const query = embedQuery(request.query, (term) =>
    inverseDocumentFrequency(documents, stats.counts.get(term) ?? 0),
  );
  // Only stop words ("what is the"): nothing to match on.
  if (query.indices.length === 0) return { results: [] };

  const [nearest, textIds] = await Promise.all([
    findNearest(pool, { ...filter, model: LOCAL_EMBEDDING_MODEL, kinds }, query, CANDIDATES),
    kinds.includes('message')
      ? searchMessageText(pool, filter, textWords(request.query), CANDIDATES)
      : Promise.resolve([]),
  ]);

  // Full-text matches join the candidates the vector index found; all are then scored by the
  // query, widened with feedback from its best first-pass matches.
  const feedback = await loadVectors(
    pool,
    request.userId,
    LOCAL_EMBEDDING_MODEL,
    nearest.slice(0, FEEDBACK_DOCUMENTS).map((candidate) => candidate.itemId),
  );
  const expanded = expandQuery(query, feedback, FEEDBACK_WEIGHT);
  const ids = [...new Set([...nearest.map((candidate) => candidate.itemId), ...textIds])];
  const [vectorScores, items] = await Promise.all([
    scoreItems(pool, request.userId, LOCAL_EMBEDDING_MODEL, ids, expanded),
    loadMessages(pool, request.userId, ids),
  ]);
  const details = new Map(items.map((item) => [item.id, item]));
  const smoothed = smoothAcrossNeighbours(vectorScores, details);
  // A candidate the query shares nothing with gets no vector rank at all, rather than an
  // arbitrary one among ties at zero.
  const vectorRanking = [...smoothed]
    .filter(([, score]) => score > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([id]) => id);

  const fused = new Map<string, number>();
  for (const [rank, id] of vectorRanking.entries()) {
    fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank));
  }
  for (const [rank, id] of textIds.entries()) {
    fused.set(id, (fused.get(id) ?? 0) + TEXT_WEIGHT / (RRF_K + rank));
  }

  const results = [...fused]
    .flatMap(([id, score]) => {
      const item = details.get(id);
      return item ? [{ item, score: score * recencyFactor(item.createdAt, now) }] : [];
    })
    .sort((a, b) => b.score - a.score)
    .slice(0, request.limit);
  return {
    results: results.map(({ item, score }) => ({
      kind: item.kind,
      id: item.id,
      score,
      text: item.text,
      metadata: item.metadata,
      createdAt: item.createdAt.toISOString(),
      conversationId: item.conversationId,
    })),
  };
}

function narrowRange(request: SearchRequest, now: Date): { from?: Date; to?: Date } {
  const spoken = parseDateRange(request.query, now);
  const from = [request.from ? new Date(request.from) : undefined, spoken?.from]
    .filter((date): date is Date => date !== undefined)
    .sort((a, b) => b.getTime() - a.getTime())[0];
  const to = [request.to ? new Date(request.to) : undefined, spoken?.to]
    .filter((date): date is Date => date !== undefined)
    .sort((a, b) => a.getTime() - b.getTime())[0];
  return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

// Words for Postgres' own parser: letters and digits only, so no user text reaches tsquery syntax.
function textWords(query: string): string[] {
  return (query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 64);
}

function smoothAcrossNeighbours(
  scores: Map<string, number>,
  details: Map<string, ItemDetails>,
): Map<string, number> {
  const byPosition = new Map<string, number>();
  for (const [id, score] of scores) {
    const item = details.get(id);
    if (item?.position != null) byPosition.set(`${item.conversationId}:${item.position}`, score);
  }
  const smoothed = new Map<string, number>();
  for (const [id, score] of scores) {
    const item = details.get(id);
    if (item?.position == null) {
      smoothed.set(id, score);
      continue;
    }
    const before = byPosition.get(`${item.conversationId}:${item.position - 1}`) ?? 0;
    const after = byPosition.get(`${item.conversationId}:${item.position + 1}`) ?? 0;
    smoothed.set(id, score + NEIGHBOUR_WEIGHT * Math.max(before, after));
  }
  return smoothed;
}

function recencyFactor(createdAt: Date, now: Date): number {
  const ageDays = Math.max(now.getTime() - createdAt.getTime(), 0) / 86_400_000;
  return 1 + RECENCY_BOOST * 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}
