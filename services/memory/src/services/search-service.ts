import { MemoryKind, type MemorySearchRequest, type MemorySearchResponse } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  embedQuery,
  expandQuery,
  inverseDocumentFrequency,
  LOCAL_EMBEDDING_MODEL,
} from '@jarvis/embeddings';
import type { z } from 'zod';
import { findNearestDense } from '../repositories/dense-embeddings-repository';
import { documentSource } from '../repositories/documents-repository';
import { findNearest, loadVectors, scoreItems } from '../repositories/embeddings-repository';
import { factSource } from '../repositories/facts-repository';
import { fileSource } from '../repositories/files-repository';
import {
  DEFAULT_IMPORTANCE,
  type ItemDetails,
  loadAdjacentMessages,
  messageSource,
  type SearchSource,
  TEXT_MATCH_BUDGET,
} from '../repositories/search-repository';
import { summarySource } from '../repositories/summaries-repository';
import { loadQueryTerms } from '../repositories/term-stats-repository';
import type { DenseIndex } from './dense-index';
import { indexUserMessagesNow } from './index-messages';
import { MONTHS, parseDateRange } from './query-dates';

type SearchRequest = z.output<typeof MemorySearchRequest> & {
  // For lookups by likeness ("facts like this message"): "I moved last month" is about a move,
  // not a request for last month's items.
  isQueryDateIgnored?: boolean;
  // For a turn's recall: the messages still queued for indexing are the newest, which its
  // prompt shows anyway, so it does not wait for them.
  areQueuedMessagesSkipped?: boolean;
};

// What a search looks for, whatever it ranks (views).
type QueryRequest = Omit<SearchRequest, 'kinds' | 'limit'>;

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
const IMPORTANCE_SPREAD = 0.1;
// The best fused messages whose adjacent messages inherit PROPAGATION_WEIGHT of their score,
// after fusion: the turn that answers is often the one after the turn that shares the question's
// words, and it may be a turn no ranker found.
const PROPAGATION_SOURCES = 20;
const PROPAGATION_WEIGHT = 0.1;
// A "when" question prefers the messages that say when.
const TIME_BOOST = 0.2;

// The kinds search can find, each with its own full-text search.
const SOURCES: Partial<Record<MemoryKind, SearchSource>> = {
  message: messageSource,
  fact: factSource,
  summary: summarySource,
  document: documentSource,
  file: fileSource,
};

// Items of one kind by id, as search shows them (forgotten ones are not found).
export function loadItems(
  pool: Pool,
  kind: MemoryKind,
  userId: string,
  ids: string[],
): Promise<ItemDetails[]> {
  return SOURCES[kind]?.load(pool, userId, ids) ?? Promise.resolve([]);
}

export async function searchMemory(
  pool: Pool,
  request: SearchRequest,
  now = new Date(),
  dense?: DenseIndex,
): Promise<MemorySearchResponse> {
  const [response] = await searchMemoryViews(
    pool,
    request,
    [{ kinds: request.kinds ?? MemoryKind.options, limit: request.limit }],
    now,
    dense,
  );
  return response;
}

// One ranking of a search: the best `limit` items of these kinds.
export type SearchView = { kinds: readonly MemoryKind[]; limit: number };

// A response per view, in the views' order. Array.map cannot say that it keeps a tuple's length,
// hence the casts where they are built.
type ViewResponses<V extends readonly SearchView[]> = { [K in keyof V]: MemorySearchResponse };

// One query ranked several ways at once, each view as searchMemory would rank it alone. What
// the views have in common is asked for once: the term statistics, the query's embedding, each
// kind's full-text matches, the items, the feedback vectors. A turn's recall ranks the user's
// facts alone beside everything: two searches would make those statements and that work twice,
// on every turn's path.
export async function searchMemoryViews<const V extends readonly SearchView[]>(
  pool: Pool,
  request: QueryRequest,
  views: V,
  now = new Date(),
  dense?: DenseIndex,
): Promise<ViewResponses<V>> {
  const none = () => views.map(() => ({ results: [] })) as ViewResponses<V>;
  const kinds = [...new Set(views.flatMap((view) => view.kinds))];
  if (kinds.includes('message') && !request.areQueuedMessagesSkipped) {
    await indexUserMessagesNow(pool, request.userId);
  }
  const range = narrowRange(request, now);
  const filter = {
    userId: request.userId,
    conversationId: request.conversationId,
    from: range.from,
    to: range.to,
  };
  const [stats, denseQuery] = await Promise.all([
    loadQueryTerms(pool, request.userId, request.query),
    dense?.embedQuery(request.userId, request.query),
  ]);
  const documents = Math.max(stats.items, 1);
  const query = embedQuery(stats.terms, (term) =>
    inverseDocumentFrequency(documents, stats.counts.get(term) ?? 0),
  );
  // Only stop words ("what is the") and no model to read them: nothing to match on.
  if (query.indices.length === 0 && !denseQuery) return none();

  const textTerms = rarestTerms(stats.terms, stats.counts);
  const sources = kinds.flatMap((kind) => {
    const source = SOURCES[kind];
    return source ? [{ kind, source }] : [];
  });
  const [nearestByView, denseNearestByView, textLists] = await Promise.all([
    Promise.all(
      views.map((view) =>
        query.indices.length === 0
          ? []
          : findNearest(
              pool,
              { ...filter, model: LOCAL_EMBEDDING_MODEL, kinds: view.kinds },
              query,
              CANDIDATES,
            ),
      ),
    ),
    Promise.all(
      views.map((view) =>
        denseQuery
          ? findNearestDense(
              pool,
              { ...filter, kinds: view.kinds },
              denseQuery.dense,
              denseQuery.vector,
              CANDIDATES,
            )
          : [],
      ),
    ),
    Promise.all(
      sources.map(({ source }) => source.searchText(pool, filter, textTerms, CANDIDATES)),
    ),
  ]);
  const textByKind = new Map(sources.map(({ kind }, index) => [kind, textLists[index] ?? []]));

  // Full-text matches join the candidates the vector index found; all are then scored by the
  // query, widened with feedback from its best first-pass matches.
  const feedbackIds = nearestByView.map((nearest) =>
    nearest.slice(0, FEEDBACK_DOCUMENTS).map((candidate) => candidate.itemId),
  );
  const feedback = await loadVectors(pool, request.userId, LOCAL_EMBEDDING_MODEL, [
    ...new Set(feedbackIds.flat()),
  ]);
  const candidates = views.map((view, index) => {
    const denseNearest = denseNearestByView[index] ?? [];
    const vectorCandidates = [...(nearestByView[index] ?? []), ...denseNearest];
    const viewTexts = view.kinds.flatMap((kind) => {
      const matched = textByKind.get(kind);
      return matched ? [matched] : [];
    });
    return {
      expanded: expandQuery(
        query,
        (feedbackIds[index] ?? []).flatMap((id) => feedback.get(id) ?? []),
        FEEDBACK_WEIGHT,
      ),
      kindOf: new Map(vectorCandidates.map((candidate) => [candidate.itemId, candidate.kind])),
      ids: [
        ...new Set([...vectorCandidates.map((candidate) => candidate.itemId), ...viewTexts.flat()]),
      ],
      texts: viewTexts,
      denseNearest,
      limit: view.limit,
    };
  });
  const [vectorScoresByView, items] = await Promise.all([
    Promise.all(
      candidates.map(({ ids, expanded }) =>
        scoreItems(pool, request.userId, LOCAL_EMBEDDING_MODEL, ids, expanded),
      ),
    ),
    Promise.all(
      sources.map(({ kind, source }) => {
        const matchedText = new Set(textByKind.get(kind));
        const own = new Set(
          candidates.flatMap(({ ids, kindOf }) =>
            ids.filter((id) => kindOf.get(id) === kind || matchedText.has(id)),
          ),
        );
        return source.load(pool, request.userId, [...own]);
      }),
    ).then((lists) => lists.flat()),
  ]);
  const details = new Map(items.map((item) => [item.id, item]));
  const fusedByView = candidates.map((candidate, index) =>
    fuseRankings(
      smoothAcrossNeighbours(vectorScoresByView[index] ?? new Map(), details),
      candidate.denseNearest,
      candidate.texts,
    ),
  );
  const adjacent = await loadAdjacentMessages(pool, filter, [
    ...new Set(fusedByView.flatMap((fused) => topMessageIds(fused, details))),
  ]);
  for (const neighbour of adjacent) {
    if (!details.has(neighbour.id)) details.set(neighbour.id, neighbour);
  }
  const timeBoost = TIME_QUESTION.test(request.query) ? TIME_BOOST : 0;
  const ranked = candidates.map((candidate, index) =>
    orderByWeight(
      propagateToNeighbours(fusedByView[index] ?? new Map(), adjacent),
      details,
      now,
      timeBoost,
    ).slice(0, candidate.limit),
  );
  // Off the search's path, as the gateway's "last used" of a key: a mark is a committed write
  // (a round trip and a WAL flush the caller would wait for), and one lost to a failure or a
  // crash only leaves an item looking a little less used.
  for (const { kind, source } of sources) {
    const returned = ranked.flat().flatMap(({ item }) => (item.kind === kind ? [item.id] : []));
    void source.markReturned?.(pool, request.userId, [...new Set(returned)]).catch(() => {});
  }
  return ranked.map((results) => ({
    results: results.map(({ item, score }) => ({
      kind: item.kind,
      id: item.id,
      score,
      text: item.text,
      metadata: item.metadata,
      createdAt: item.createdAt.toISOString(),
      conversationId: item.conversationId,
    })),
  })) as ViewResponses<V>;
}

// One view's rankings fused by reciprocal rank.
function fuseRankings(
  vectorScores: Map<string, number>,
  denseNearest: { itemId: string; similarity: number }[],
  textLists: string[][],
): Map<string, number> {
  // A candidate the query shares nothing with gets no vector rank at all, rather than an
  // arbitrary one among ties at zero.
  const vectorRanking = [...vectorScores]
    .filter(([, score]) => score > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([id]) => id);

  const fused = new Map<string, number>();
  for (const [rank, id] of vectorRanking.entries()) {
    fused.set(id, (fused.get(id) ?? 0) + 1 / (RRF_K + rank));
  }
  // The embed model's ranking counts as much as the sparse one: it knows synonyms and
  // paraphrases the sparse one cannot, and misses rare names the sparse one weighs highly. Its
  // nearest items are always some items, however unrelated, so each rank also counts by its
  // cosine similarity: a close match is worth more than the best of poor ones.
  for (const [rank, candidate] of denseNearest.entries()) {
    const weight = Math.max(candidate.similarity, 0) / (RRF_K + rank);
    fused.set(candidate.itemId, (fused.get(candidate.itemId) ?? 0) + weight);
  }
  for (const textIds of textLists) {
    for (const [rank, id] of textIds.entries()) {
      fused.set(id, (fused.get(id) ?? 0) + TEXT_WEIGHT / (RRF_K + rank));
    }
  }
  return fused;
}

// The best fused messages, whose adjacent messages inherit from them.
function topMessageIds(fused: Map<string, number>, details: Map<string, ItemDetails>): string[] {
  return [...fused]
    .filter(([id]) => details.get(id)?.kind === 'message')
    .sort((a, b) => b[1] - a[1])
    .slice(0, PROPAGATION_SOURCES)
    .map(([id]) => id);
}

// Each message gains a share of its best adjacent message's fused score; an adjacent message
// that no ranker found joins with that share alone.
function propagateToNeighbours(
  fused: Map<string, number>,
  adjacent: { id: string; of: string }[],
): Map<string, number> {
  const best = new Map<string, number>();
  const raise = (id: string, score: number) => best.set(id, Math.max(best.get(id) ?? 0, score));
  for (const { id, of } of adjacent) {
    raise(id, fused.get(of) ?? 0);
    raise(of, fused.get(id) ?? 0);
  }
  const propagated = new Map(fused);
  for (const [id, score] of best)
    propagated.set(id, (fused.get(id) ?? 0) + PROPAGATION_WEIGHT * score);
  return propagated;
}

// "When did…", "how long ago…": the answer is a message that says when.
const TIME_QUESTION = /\b(when|how long ago|what (year|month|day|date|time))\b/i;
const TIME_MENTION =
  /\b(yesterday|today|tonight|tomorrow|ago|last|next|this (morning|week|weekend|month|year)|(mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|may|june|july|august|september|october|november|december|weekend|week|month|year|since|\d{4})\b/i;

// Candidates in order: the fused score weighted by recency and importance.
function orderByWeight(
  fused: Map<string, number>,
  details: Map<string, ItemDetails>,
  now: Date,
  timeBoost: number,
): { item: ItemDetails; score: number }[] {
  return [...fused]
    .flatMap(([id, score]) => {
      const item = details.get(id);
      if (!item) return [];
      const weight =
        recencyFactor(item.createdAt, now) *
        importanceFactor(item.importance) *
        (timeBoost > 0 && TIME_MENTION.test(item.text) ? 1 + timeBoost : 1);
      return [{ item, score: score * weight }];
    })
    .sort((a, b) => b.score - a.score);
}

const DAY_FIRST = new RegExp(
  `\\b(\\d{1,2})(?:st|nd|rd|th)?\\s+(${MONTHS.join('|')}),?\\s+(\\d{4})\\b`,
  'i',
);
const MONTH_FIRST = new RegExp(
  `\\b(${MONTHS.join('|')})\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})\\b`,
  'i',
);
const DAY_MS = 86_400_000;

// A calendar day the query names ("on 3 June, 2023", "October 13, 2023"), with a day either
// side: what was said then, or told the day after.
function parseNamedDay(query: string): { from: Date; to: Date } | undefined {
  const dayFirst = query.match(DAY_FIRST);
  const monthFirst = dayFirst ? undefined : query.match(MONTH_FIRST);
  const [day, month, year] = dayFirst
    ? [dayFirst[1], dayFirst[2], dayFirst[3]]
    : [monthFirst?.[2], monthFirst?.[1], monthFirst?.[3]];
  if (!day || !month || !year) return undefined;
  const start = Date.UTC(Number(year), MONTHS.indexOf(month.toLowerCase()), Number(day));
  return { from: new Date(start - DAY_MS), to: new Date(start + 2 * DAY_MS) };
}

function narrowRange(request: QueryRequest, now: Date): { from?: Date; to?: Date } {
  const spoken = request.isQueryDateIgnored
    ? undefined
    : (parseDateRange(request.query, now) ?? parseNamedDay(request.query));
  const from = [request.from ? new Date(request.from) : undefined, spoken?.from]
    .filter((date): date is Date => date !== undefined)
    .sort((a, b) => b.getTime() - a.getTime())[0];
  const to = [request.to ? new Date(request.to) : undefined, spoken?.to]
    .filter((date): date is Date => date !== undefined)
    .sort((a, b) => a.getTime() - b.getTime())[0];
  return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

// The query's terms the full-text ranker gets: rarest first, within TEXT_MATCH_BUDGET items. The
// terms are the lexemes of the full-text columns, so their counts say how many items each one
// matches; a term no item has matches none.
function rarestTerms(terms: string[], counts: Map<string, number>): string[] {
  const byRarity = [...new Set(terms)]
    .flatMap((term) => {
      const items = counts.get(term) ?? 0;
      return items === 0 ? [] : [{ term, items }];
    })
    .sort((a, b) => a.items - b.items);
  const chosen: string[] = [];
  let items = 0;
  for (const candidate of byRarity) {
    if (items + candidate.items > TEXT_MATCH_BUDGET) break;
    chosen.push(candidate.term);
    items += candidate.items;
  }
  return chosen;
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

// Importance 1-10 moves a score by at most 10 % either way around the neutral 5.
function importanceFactor(importance = DEFAULT_IMPORTANCE): number {
  return 1 + (IMPORTANCE_SPREAD * (importance - DEFAULT_IMPORTANCE)) / DEFAULT_IMPORTANCE;
}

function recencyFactor(createdAt: Date, now: Date): number {
  const ageDays = Math.max(now.getTime() - createdAt.getTime(), 0) / 86_400_000;
  return 1 + RECENCY_BOOST * 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}
