// The part of a found message worth showing in a result: search matches by meaning as well as by
// words, so a hit may not contain the query at all, and a long message cannot be shown whole.

type Snippet = {
  before: string;
  // The first query word the text contains, as the text spells it; empty when none is in it.
  match: string;
  after: string;
};

// Shorter query words (a, of, is) would light up noise rather than the reason for the hit.
const MIN_WORD_CHARS = 3;

function escapeForRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Backs the cut to the nearest space, so a snippet does not open or close in mid-word.
function cutAtWord(text: string, index: number, isStart: boolean): number {
  if (index <= 0 || index >= text.length) return Math.max(0, Math.min(index, text.length));
  const space = isStart ? text.indexOf(' ', index) : text.lastIndexOf(' ', index);
  const isNear = space !== -1 && Math.abs(space - index) < 20;
  if (!isNear) return index;
  return isStart ? space + 1 : space;
}

// Up to maxChars of the text on one line, around the first query word it contains, with an
// ellipsis where it was cut.
export function snippetOf(text: string, query: string, maxChars = 160): Snippet {
  const line = text.replace(/\s+/g, ' ').trim();
  const words = (query.match(/[\p{L}\p{N}]+/gu) ?? []).filter(
    (word) => word.length >= MIN_WORD_CHARS,
  );
  const found =
    words.length === 0 ? null : new RegExp(words.map(escapeForRegExp).join('|'), 'iu').exec(line);
  if (!found || found.index === undefined) {
    if (line.length <= maxChars) return { before: line, match: '', after: '' };
    const end = cutAtWord(line, maxChars - 1, false);
    return { before: `${line.slice(0, end)}…`, match: '', after: '' };
  }
  const match = found[0];
  // A third of the room before the word, the rest after it: the words that follow tell more.
  const room = Math.max(0, maxChars - match.length);
  let start = Math.max(0, found.index - Math.floor(room / 3));
  let end = Math.min(line.length, start + maxChars);
  start = Math.max(0, Math.min(start, end - maxChars));
  if (start > 0) start = Math.min(cutAtWord(line, start, true), found.index);
  if (end < line.length) end = Math.max(cutAtWord(line, end, false), found.index + match.length);
  return {
    before: `${start > 0 ? '…' : ''}${line.slice(start, found.index)}`,
    match,
    after: `${line.slice(found.index + match.length, end)}${end < line.length ? '…' : ''}`,
  };
}
