import { createHash } from 'node:crypto';
import { toTerms } from '@jarvis/embeddings';
import type { Provider } from '../providers/provider';

// The built-in embedder: no weights, no network, deterministic, so the product works (and tests
// run) with no embedding model at all. Stemmed words, word pairs and character trigrams are
// hashed into signed buckets (the hashing trick), with sub-linear counts, then L2-normalised:
// cosine similarity becomes weighted word overlap, with trigrams catching typos and inflections.
// It knows nothing of synonyms; a real model (Ollama's nomic-embed-text) does.

export const LOCAL_PROVIDER = 'local';
export const LOCAL_MODEL = 'hash-v1';

const PAIR_WEIGHT = 0.5;
const TRIGRAM_WEIGHT = 0.25;

function embedLocally(text: string, dimensions: number): number[] {
  const features = new Map<string, number>();
  const add = (key: string, weight: number) => features.set(key, (features.get(key) ?? 0) + weight);
  const terms = toTerms(text);
  for (const [index, term] of terms.entries()) {
    add(`w:${term}`, 1);
    const next = terms[index + 1];
    if (next !== undefined) add(`b:${term} ${next}`, PAIR_WEIGHT);
    const padded = ` ${term} `;
    for (let start = 0; start + 3 <= padded.length; start++) {
      add(`c:${padded.slice(start, start + 3)}`, TRIGRAM_WEIGHT);
    }
  }
  const vector = new Array<number>(dimensions).fill(0);
  for (const [key, weight] of features) {
    const digest = createHash('md5').update(key).digest();
    const index = digest.readUInt32LE(0) % dimensions;
    const sign = (digest[4] ?? 0) & 1 ? 1 : -1;
    vector[index] = (vector[index] ?? 0) + sign * Math.log1p(weight);
  }
  const norm = Math.hypot(...vector);
  return norm === 0 ? vector : vector.map((value) => value / norm);
}

// Served like any provider, as the last model of the embed route.
export function createLocalProvider(dimensions: number): Provider {
  return {
    name: LOCAL_PROVIDER,
    hosted: false,
    async embed(call) {
      return {
        vectors: call.texts.map((text) => embedLocally(text, dimensions)),
        inputTokens: 0,
      };
    },
  };
}
