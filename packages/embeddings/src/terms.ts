// Words as the local embedder and the memory's term statistics see them: lower-cased, stop words
// dropped, lightly stemmed so "painting", "painted" and "paints" meet. Both sides must agree, so
// this is the one place that decides what a term is.

const STOP_WORDS = new Set(
  (
    'a an the and or but if then so of to in on at by for with from about as into like ' +
    'is are was were be been being am do does did have has had having i me my we our you your ' +
    'he him his she her it its they them their this that these those what which who whom ' +
    'how when where why will would can could should shall may might must not no yes just ' +
    'very too also there here than up down out over again all any some such only own same ' +
    'more most other s t don now oh yeah hey wow really'
  ).split(' '),
);

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu;
const SUFFIXES = ['ing', 'ed', 'er', 'ion', 'ly'];
const MIN_STEM = 3;

// A light stemmer: plural first ("paintings" -> "painting"), then one inflection ("painting" ->
// "paint"), then a doubled final consonant ("runn" -> "run") and a final "e" ("named" and "name"
// both -> "nam"). Crude next to Porter's, but it never needs a dictionary.
export function stem(word: string): string {
  let stemmed = word;
  if (stemmed.length > 4 && stemmed.endsWith('ies')) stemmed = `${stemmed.slice(0, -3)}y`;
  else if (stemmed.length > 3 && /[^su]s$/.test(stemmed) && !stemmed.endsWith('is')) {
    stemmed = stemmed.slice(0, -1);
  }
  for (const suffix of SUFFIXES) {
    if (stemmed.endsWith(suffix) && stemmed.length - suffix.length >= MIN_STEM) {
      stemmed = stemmed.slice(0, -suffix.length);
      break;
    }
  }
  if (stemmed.length > MIN_STEM) stemmed = stemmed.replace(/([^aeiou\d])\1$/u, '$1');
  if (stemmed.length > MIN_STEM && stemmed.endsWith('e')) stemmed = stemmed.slice(0, -1);
  return stemmed;
}

export function toTerms(text: string): string[] {
  const words = text.toLowerCase().match(WORD) ?? [];
  const terms: string[] = [];
  for (const raw of words) {
    const word = raw.replace(/['’]s$/, '');
    if (STOP_WORDS.has(word)) continue;
    terms.push(/^\p{N}+$/u.test(word) ? word : stem(word));
  }
  return terms;
}

// Terms a stop word stems to as well: "liked" and "likes" share "like"'s term. Counts of such
// a term leave out the stop word's own uses, so they say little of how common it is.
const STOP_TERMS = new Set([...STOP_WORDS].map(stem));

export function isStopTerm(term: string): boolean {
  return STOP_TERMS.has(term);
}

// In how many of the texts each term occurs: what term statistics count.
export function countTermsByText(texts: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (const term of new Set(toTerms(text))) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  return counts;
}
