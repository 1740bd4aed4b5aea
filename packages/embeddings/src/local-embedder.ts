import { createHash } from 'node:crypto';

// The built-in embedder: no weights, deterministic. Terms and term pairs are hashed into
// 2^20 signed buckets and kept sparse (pgvector `sparsevec`), so unlike a small dense hash there
// are almost no collisions. A text's neighbours in its conversation count at half weight, since a
// question and its answer often sit in adjacent turns. At query time each term is weighted by its
// rarity in the user's memory (inverse document frequency), which the caller supplies.
// The terms come from the caller too, in the order they occur: memory takes them from Postgres'
// own text search (its parser, stop words and Snowball stemmer), so a term here and a lexeme of
// its full-text search are one and the same.
// Character n-grams were tried: with stemming they added under 0.01 recall on LoCoMo but made
// vectors ten times denser, and HNSW inserts ten times slower.

export const LOCAL_EMBEDDING_MODEL = 'local-sparse-v1';
export const LOCAL_EMBEDDING_DIMENSIONS = 1 << 20;
// pgvector indexes sparse vectors of at most 1,000 non-zero entries: keep the strongest.
const MAX_NON_ZERO = 1_000;

const PAIR_WEIGHT = 0.5;
const CONTEXT_WEIGHT = 0.5;

export type SparseVector = { indices: number[]; values: number[] };

export type EmbedInput = {
  terms: string[];
  // The terms of surrounding text (e.g. the previous and next message), weighted below the
  // text's own.
  context?: string[];
};

type Features = Map<string, { weight: number; term: string }>;

function addFeatures(features: Features, terms: string[], scale: number): void {
  const add = (key: string, weight: number, term: string) => {
    const existing = features.get(key);
    features.set(key, { weight: (existing?.weight ?? 0) + weight * scale, term });
  };
  for (const term of terms) add(`w:${term}`, 1, term);
  for (let i = 0; i + 1 < terms.length; i++) {
    add(`b:${terms[i]} ${terms[i + 1]}`, PAIR_WEIGHT, `${terms[i]}`);
  }
}

const bucketCache = new Map<string, { index: number; sign: number }>();

function bucketOf(key: string): { index: number; sign: number } {
  const cached = bucketCache.get(key);
  if (cached) return cached;
  const digest = createHash('md5').update(key).digest();
  const bucket = {
    index: digest.readUInt32LE(0) % LOCAL_EMBEDDING_DIMENSIONS,
    sign: (digest[4] ?? 0) & 1 ? 1 : -1,
  };
  // Bounded: a long-running process sees an open-ended vocabulary.
  if (bucketCache.size > 200_000) bucketCache.clear();
  bucketCache.set(key, bucket);
  return bucket;
}

function toSparse(
  features: Features,
  weigh: (term: string, weight: number) => number,
): SparseVector {
  const buckets = new Map<number, number>();
  for (const [key, feature] of features) {
    const { index, sign } = bucketOf(key);
    buckets.set(index, (buckets.get(index) ?? 0) + sign * weigh(feature.term, feature.weight));
  }
  let entries = [...buckets].filter(([, value]) => value !== 0);
  if (entries.length > MAX_NON_ZERO) {
    entries = entries.sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, MAX_NON_ZERO);
  }
  entries.sort((a, b) => a[0] - b[0]);
  const norm = Math.hypot(...entries.map(([, value]) => value)) || 1;
  return {
    indices: entries.map(([index]) => index),
    values: entries.map(([, value]) => value / norm),
  };
}

// A stored item: sub-linear term frequency, so a word said five times is not five times as
// relevant.
export function embedDocument(input: EmbedInput): SparseVector {
  const features: Features = new Map();
  addFeatures(features, input.terms, 1);
  if (input.context) addFeatures(features, input.context, CONTEXT_WEIGHT);
  return toSparse(features, (_term, weight) => Math.log1p(weight));
}

// A search query: each feature weighted by the inverse document frequency of its term.
export function embedQuery(
  terms: string[],
  inverseFrequency: (term: string) => number,
): SparseVector {
  const features: Features = new Map();
  addFeatures(features, terms, 1);
  return toSparse(features, (term, weight) => weight * inverseFrequency(term));
}

export function dot(a: SparseVector, b: SparseVector): number {
  let sum = 0;
  let i = 0;
  let j = 0;
  while (i < a.indices.length && j < b.indices.length) {
    const left = a.indices[i] ?? 0;
    const right = b.indices[j] ?? 0;
    if (left === right) {
      sum += (a.values[i] ?? 0) * (b.values[j] ?? 0);
      i++;
      j++;
    } else if (left < right) i++;
    else j++;
  }
  return sum;
}

// Rocchio feedback: the query moved towards the centroid of its best first-pass matches. It adds
// the words those matches share, which the query did not say.
export function expandQuery(
  query: SparseVector,
  top: SparseVector[],
  weight: number,
): SparseVector {
  const merged = new Map<number, number>();
  for (const [k, index] of query.indices.entries()) merged.set(index, query.values[k] ?? 0);
  for (const vector of top) {
    for (const [k, index] of vector.indices.entries()) {
      merged.set(index, (merged.get(index) ?? 0) + ((vector.values[k] ?? 0) * weight) / top.length);
    }
  }
  const entries = [...merged].sort((a, b) => a[0] - b[0]);
  return { indices: entries.map(([index]) => index), values: entries.map(([, value]) => value) };
}

// In how many of the items each term occurs (each item given as its terms): what the term
// statistics count.
export function countTermsByItem(items: string[][]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const terms of items) {
    for (const term of new Set(terms)) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  return counts;
}

// BM25's inverse document frequency, never negative.
export function inverseDocumentFrequency(documents: number, withTerm: number): number {
  return Math.log(1 + (documents - withTerm + 0.5) / (withTerm + 0.5));
}
