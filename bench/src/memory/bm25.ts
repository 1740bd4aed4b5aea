// A plain BM25 ranking (k1 1.2, b 0.75; lower-cased words, English stop words dropped, no
// stemming): the baseline memory search has to beat.

const STOP_WORDS = new Set(
  'a an the and or but if of to in on at by for with from is are was were be been do does did have has had i me my we our you your he him his she her it its they them their this that what which who how when where why will would can could'.split(
    ' ',
  ),
);

function words(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter(
    (word) => !STOP_WORDS.has(word),
  );
}

export function createBm25(documents: string[]): (query: string, limit: number) => number[] {
  const tokenized = documents.map(words);
  const averageLength =
    tokenized.reduce((sum, doc) => sum + doc.length, 0) / Math.max(documents.length, 1);
  const frequency = new Map<string, number>();
  for (const doc of tokenized)
    for (const word of new Set(doc)) frequency.set(word, (frequency.get(word) ?? 0) + 1);
  const counts = tokenized.map((doc) => {
    const map = new Map<string, number>();
    for (const word of doc) map.set(word, (map.get(word) ?? 0) + 1);
    return map;
  });
  return (query, limit) => {
    const terms = words(query);
    const scores = counts.map((doc, index) => {
      let score = 0;
      for (const term of terms) {
        const tf = doc.get(term);
        if (!tf) continue;
        const df = frequency.get(term) ?? 0;
        const idf = Math.log(1 + (documents.length - df + 0.5) / (df + 0.5));
        const length = tokenized[index]?.length ?? 0;
        score += (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * length) / averageLength));
      }
      return { index, score };
    });
    return scores
      .filter((entry) => entry.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map((entry) => entry.index);
  };
}
