import { describe, expect, it } from 'vitest';
import {
  countTermsByItem,
  dot,
  embedDocument,
  embedQuery,
  expandQuery,
  inverseDocumentFrequency,
  LOCAL_EMBEDDING_DIMENSIONS,
  type SparseVector,
} from './local-embedder';

const SAME_WEIGHT = () => 1;

// Terms as memory gets them from Postgres: stop words gone, each word stemmed, in text order.
function terms(text: string): string[] {
  return text.split(' ');
}

function sumOfSquares(vector: SparseVector): number {
  return vector.values.reduce((sum, value) => sum + value * value, 0);
}

function expectSortedUniqueIndices(vector: SparseVector): void {
  expect(vector.indices).toHaveLength(vector.values.length);
  for (let k = 1; k < vector.indices.length; k++) {
    expect(vector.indices[k] ?? 0).toBeGreaterThan(vector.indices[k - 1] ?? 0);
  }
  for (const index of vector.indices) {
    expect(index).toBeGreaterThanOrEqual(0);
    expect(index).toBeLessThan(LOCAL_EMBEDDING_DIMENSIONS);
  }
}

describe('embedDocument', () => {
  const input = {
    terms: terms('adopt rescu dog name max last spring'),
    context: terms('love long walk river'),
  };

  it('embeds the same text to the same vector every time', () => {
    expect(embedDocument(input)).toEqual(embedDocument({ ...input }));
  });

  it('returns a unit vector with sorted, unique indices and no zero entries', () => {
    const vector = embedDocument(input);

    expect(vector.indices.length).toBeGreaterThan(0);
    expect(sumOfSquares(vector)).toBeCloseTo(1, 10);
    expectSortedUniqueIndices(vector);
    expect(vector.values.every((value) => value !== 0)).toBe(true);
  });

  it('has an empty vector for text without terms (only stop words)', () => {
    expect(embedDocument({ terms: [] })).toEqual({ indices: [], values: [] });
  });

  it('counts its context towards a query about it, but less than its own text', () => {
    const query = embedQuery(terms('dog name max'), SAME_WEIGHT);
    const plain = embedDocument({ terms: terms('went hike hill') });
    const withContext = embedDocument({
      terms: terms('went hike hill'),
      context: terms('adopt dog name max'),
    });
    const aboutIt = embedDocument({
      terms: terms('adopt dog name max'),
      context: terms('went hike hill'),
    });

    expect(dot(query, plain)).toBe(0);
    expect(dot(query, withContext)).toBeGreaterThan(0.1);
    expect(dot(query, aboutIt)).toBeGreaterThan(dot(query, withContext));
  });

  it('weighs a repeated word sub-linearly', () => {
    const once = embedDocument({ terms: terms('sunris lake') });
    const often = embedDocument({ terms: terms('sunris sunris sunris sunris lake') });
    const sunrise = embedQuery(['sunris'], SAME_WEIGHT);
    const lake = embedQuery(['lake'], SAME_WEIGHT);

    expect(dot(sunrise, often)).toBeGreaterThan(dot(sunrise, once));
    // Four times the word is far from four times the weight: the lake still counts.
    expect(dot(lake, often)).toBeGreaterThan(0.2);
  });

  it('keeps at most 1,000 non-zero entries of a very long text, the strongest ones', () => {
    const words = Array.from({ length: 3_000 }, (_, index) => `word${index}`);

    const vector = embedDocument({ terms: [...Array(30).fill('sunris'), ...words] });

    expect(vector.indices).toHaveLength(1_000);
    expect(sumOfSquares(vector)).toBeCloseTo(1, 10);
    expectSortedUniqueIndices(vector);
    // The repeated word outweighs every once-said word, so it survives the cut.
    const [sunriseIndex] = embedQuery(['sunris'], SAME_WEIGHT).indices;
    expect(vector.indices).toContain(sunriseIndex);
  });
});

describe('embedQuery', () => {
  it('ranks a document with the rare query term above one with only the common term', () => {
    const rareTerm = embedDocument({ terms: terms('tri sushi first time') });
    const commonTerm = embedDocument({ terms: terms('lunch sister') });
    const rarity = (weights: Record<string, number>) => (term: string) => weights[term] ?? 1;

    const sushiIsRare = embedQuery(terms('sushi lunch'), rarity({ sushi: 8, lunch: 0.2 }));
    const lunchIsRare = embedQuery(terms('sushi lunch'), rarity({ sushi: 0.2, lunch: 8 }));

    expect(dot(sushiIsRare, rareTerm)).toBeGreaterThan(3 * dot(sushiIsRare, commonTerm));
    expect(dot(lunchIsRare, commonTerm)).toBeGreaterThan(3 * dot(lunchIsRare, rareTerm));
  });

  it('returns a unit vector with sorted, unique indices', () => {
    const query = embedQuery(terms('dentist appoint'), (term) => term.length);

    expect(sumOfSquares(query)).toBeCloseTo(1, 10);
    expectSortedUniqueIndices(query);
  });

  it('has an empty vector for a query without terms (only stop words)', () => {
    expect(embedQuery([], SAME_WEIGHT)).toEqual({ indices: [], values: [] });
  });
});

describe('dot', () => {
  it('is 0 for vectors without a shared index', () => {
    const left = { indices: [1, 5, 9], values: [0.5, 0.5, 0.7] };
    const right = { indices: [2, 6, 10], values: [0.6, 0.8, 0.1] };

    expect(dot(left, right)).toBe(0);
  });

  it('multiplies only the entries both vectors have', () => {
    const left = { indices: [1, 5, 9], values: [0.5, 2, 0.7] };
    const right = { indices: [0, 5, 9, 12], values: [3, 0.25, -1, 4] };

    expect(dot(left, right)).toBeCloseTo(2 * 0.25 - 0.7, 12);
  });

  it('is 1 for an embedded text with itself', () => {
    const vector = embedDocument({ terms: terms('paint sunris lake') });

    expect(dot(vector, vector)).toBeCloseTo(1, 10);
  });

  it('is 0 against an empty vector', () => {
    expect(dot(embedDocument({ terms: ['sunris'] }), { indices: [], values: [] })).toBe(0);
  });
});

describe('expandQuery', () => {
  it("adds the feedback documents' indices, scaled by the weight and averaged", () => {
    const query = { indices: [3, 10], values: [0.6, 0.8] };
    const first = { indices: [3, 7], values: [0.5, 0.5] };
    const second = { indices: [7, 20], values: [1, 0.2] };

    const expanded = expandQuery(query, [first, second], 0.5);

    expect(expanded.indices).toEqual([3, 7, 10, 20]);
    const values = expanded.values;
    expect(values[0]).toBeCloseTo(0.6 + (0.5 * 0.5) / 2, 12);
    expect(values[1]).toBeCloseTo((0.5 * 0.5) / 2 + (1 * 0.5) / 2, 12);
    expect(values[2]).toBeCloseTo(0.8, 12);
    expect(values[3]).toBeCloseTo((0.2 * 0.5) / 2, 12);
  });

  it('lets a query reach a document that shares words only with the feedback', () => {
    const query = embedQuery(['dentist'], SAME_WEIGHT);
    const feedback = embedDocument({ terms: terms('dentist appoint fix crack molar') });
    const related = embedDocument({ terms: terms('molar still hurt') });

    const expanded = expandQuery(query, [feedback], 0.5);

    expect(dot(query, related)).toBe(0);
    expect(dot(expanded, related)).toBeGreaterThan(0);
    for (const index of [...query.indices, ...feedback.indices]) {
      expect(expanded.indices).toContain(index);
    }
    expectSortedUniqueIndices(expanded);
  });

  it('returns the query as it is without feedback', () => {
    const query = embedQuery(terms('dentist appoint'), SAME_WEIGHT);

    expect(expandQuery(query, [], 0.5)).toEqual(query);
  });
});

describe('countTermsByItem', () => {
  it('counts each term once per item that has it', () => {
    const counts = countTermsByItem([terms('paint paint lake'), terms('lake'), []]);

    expect(counts).toEqual(
      new Map([
        ['paint', 1],
        ['lake', 2],
      ]),
    );
  });
});

describe('inverseDocumentFrequency', () => {
  it('is positive, and falls as more items have the term', () => {
    const documents = 200;
    const weights = Array.from({ length: documents + 1 }, (_, withTerm) =>
      inverseDocumentFrequency(documents, withTerm),
    );

    for (const weight of weights) expect(weight).toBeGreaterThan(0);
    for (let k = 1; k < weights.length; k++) {
      expect(weights[k] ?? 0).toBeLessThan(weights[k - 1] ?? 0);
    }
  });

  it('weighs a term in one item of many far above a term in most of them', () => {
    expect(inverseDocumentFrequency(1_000, 1)).toBeGreaterThan(
      10 * inverseDocumentFrequency(1_000, 900),
    );
  });
});
