// When two fact texts say the same thing. Case, punctuation and spacing never make a fact new,
// nor does whose voice it is in ("I am allergic to peanuts", the user's; "The user is allergic to
// peanuts", extraction's); a word more or less does not either, unless it changes the meaning.

// Word sets at least this alike (Jaccard) are one fact said twice: "The user is allergic to
// peanuts and carries an EpiPen" and "… and always carries an EpiPen" are, "I like tea" and
// "I like green tea" are not.
const NEAR_DUPLICATE_JACCARD = 0.8;
// The words that only say the fact is about the user, in the first person or the third, and
// articles: every fact has them, so they would make two short facts look alike or apart.
const SUBJECT_WORDS = new Set([
  'i',
  'me',
  'my',
  'mine',
  'myself',
  'm',
  'am',
  'is',
  'are',
  's',
  'the',
  'a',
  'an',
  'user',
  'users',
]);
// Words that turn a statement into its opposite ("don't" splits into "don" and "t").
const NEGATIONS = new Set(['not', 'no', 'never', 'nor', 'none', 'nothing', 'without', 't']);

function factWords(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

export function normaliseFactText(text: string): string {
  return factWords(text).join(' ');
}

function contentWords(text: string): Set<string> {
  return new Set(factWords(text).filter((word) => !SUBJECT_WORDS.has(word)));
}

// The same words, or nearly, with no negation or number among the ones that differ: "not", or
// a date or a sum, is the whole point of a fact that otherwise repeats another.
export function isSameFact(a: string, b: string): boolean {
  if (normaliseFactText(a) === normaliseFactText(b)) return true;
  const wordsA = contentWords(a);
  const wordsB = contentWords(b);
  const union = new Set([...wordsA, ...wordsB]);
  const differing = [...union].filter((word) => !wordsA.has(word) || !wordsB.has(word));
  if (differing.some((word) => NEGATIONS.has(word) || /\p{N}/u.test(word))) return false;
  return union.size > 0 && 1 - differing.length / union.size >= NEAR_DUPLICATE_JACCARD;
}
