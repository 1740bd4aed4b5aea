// When two fact texts say the same thing. Case, punctuation and spacing never make a fact new;
// a few words of difference do not either, unless they are the ones that change its meaning.

// Word sets at least this alike (Jaccard) are one fact said twice: "I am allergic to peanuts"
// and "I'm allergic to peanuts" are, "I like tea" and "I like green tea" are not.
const NEAR_DUPLICATE_JACCARD = 0.8;
// Words that turn a statement into its opposite ("don't" splits into "don" and "t").
const NEGATIONS = new Set(['not', 'no', 'never', 'nor', 'none', 'nothing', 'without', 't']);

export function factWords(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function normaliseFactText(text: string): string {
  return factWords(text).join(' ');
}

// The same words, or nearly, with no negation or number among the ones that differ: "not", or
// a date or a sum, is the whole point of a fact that otherwise repeats another.
export function isSameFact(a: string, b: string): boolean {
  if (normaliseFactText(a) === normaliseFactText(b)) return true;
  const wordsA = new Set(factWords(a));
  const wordsB = new Set(factWords(b));
  const union = new Set([...wordsA, ...wordsB]);
  const differing = [...union].filter((word) => !wordsA.has(word) || !wordsB.has(word));
  if (differing.some((word) => NEGATIONS.has(word) || /\p{N}/u.test(word))) return false;
  return union.size > 0 && 1 - differing.length / union.size >= NEAR_DUPLICATE_JACCARD;
}
