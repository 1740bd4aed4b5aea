// Documents become plain text, then overlapping chunks small enough to embed and to show as one
// search result. Everything here is pure and runs in linear time: the input is whatever a user
// or a web page sent, so no step may backtrack, and nothing in it is ever executed or trusted.

// `page` (numbered from 1) is the page the chunk's first word is on, when the text has pages.
export type TextChunk = { index: number; content: string; tokenCount: number; page?: number };

export type ChunkOptions = {
  targetTokens?: number;
  overlapTokens?: number;
  // Where each page begins in the text, in characters: 0 first, never decreasing.
  pageStarts?: number[];
};

const DEFAULT_TARGET_TOKENS = 400;
const DEFAULT_OVERLAP_TOKENS = 60;
// Longer runs without a space (base64, minified code, long URLs) are cut into pieces this long,
// so a chunk of a few hundred words stays a few kilobytes whatever it holds.
const MAX_WORD_CHARS = 100;
const LONG_WORD = new RegExp(`\\S{${MAX_WORD_CHARS + 1},}`, 'gu');
const WORD_PIECE = new RegExp(`.{1,${MAX_WORD_CHARS}}`, 'gsu');

// Tokens are estimated, not counted: ceil(words × 1.3), a usual ratio for English text under
// BPE tokenizers. In integers, so no chunk's limit hangs on floating-point rounding.
export function estimateTokens(words: number): number {
  return Math.ceil((words * 13) / 10);
}

// The most words whose estimate stays within `tokens`.
function wordsWithin(tokens: number): number {
  return Math.floor((tokens * 10) / 13);
}

function countWords(text: string): number {
  return text.match(/\S+/g)?.length ?? 0;
}

// Their content is never text: code, styling, fallbacks for disabled scripts, page metadata.
const DROPPED_ELEMENTS = new Set(['script', 'style', 'noscript', 'head']);
// Blocks that end a paragraph, and elements that only end a line.
const PARAGRAPH_ELEMENTS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'div',
  'dl',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'header',
  'hr',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'table',
  'ul',
]);
const LINE_ELEMENTS = new Set(['br', 'dd', 'dt', 'li', 'tr']);
// Table cells sit side by side: a space keeps "a</td><td>b" two words.
const CELL_ELEMENTS = new Set(['td', 'th']);

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ensp: ' ',
  emsp: ' ',
  thinsp: ' ',
  shy: '',
  zwnj: '',
  zwj: '',
  ndash: '–',
  mdash: '—',
  hellip: '…',
  lsquo: '‘',
  rsquo: '’',
  sbquo: '‚',
  ldquo: '“',
  rdquo: '”',
  bdquo: '„',
  laquo: '«',
  raquo: '»',
  bull: '•',
  middot: '·',
  copy: '©',
  reg: '®',
  trade: '™',
  deg: '°',
  plusmn: '±',
  times: '×',
  divide: '÷',
  frac12: '½',
  frac14: '¼',
  frac34: '¾',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  sect: '§',
  para: '¶',
  iexcl: '¡',
  iquest: '¿',
};

const ENTITY = /&(?:#[xX]([0-9a-fA-F]{1,8})|#([0-9]{1,9})|([a-zA-Z][a-zA-Z0-9]{1,31}));?/g;

function fromCodePoint(code: number): string {
  // NUL, surrogates and values past Unicode are what a browser replaces too.
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
  return String.fromCodePoint(code);
}

// One pass, so `&amp;lt;` becomes `&lt;` and never `<`. Unknown names stay as written.
function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (entity, hex?: string, decimal?: string, name?: string) => {
    if (hex !== undefined) return fromCodePoint(Number.parseInt(hex, 16));
    if (decimal !== undefined) return fromCodePoint(Number.parseInt(decimal, 10));
    const named = name === undefined ? undefined : NAMED_ENTITIES[name.toLowerCase()];
    return named ?? entity;
  });
}

const TAG_NAME = /<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)/y;

// The index just past the `>` that closes the tag starting at `from`, skipping quoted attribute
// values; the end of the input when the tag never closes, as in a browser.
function endOfTag(html: string, from: number): number {
  let at = from;
  while (at < html.length) {
    const char = html[at];
    if (char === '>') return at + 1;
    if (char === '"' || char === "'") {
      const close = html.indexOf(char, at + 1);
      if (close === -1) return html.length;
      at = close + 1;
    } else at += 1;
  }
  return html.length;
}

// Where a dropped element's content ends: after its closing tag, or where the body begins for
// a head left open (its closing tag is optional), else at the end of the input.
function endOfDroppedElement(html: string, name: string, from: number): number {
  const closer = new RegExp(name === 'head' ? '</head\\b|<body\\b' : `</${name}\\b`, 'gi');
  closer.lastIndex = from;
  const found = closer.exec(html);
  if (!found) return html.length;
  return found[0].toLowerCase() === '<body' ? found.index : endOfTag(html, found.index);
}

type Piece = { text: string; isPreformatted: boolean } | { separator: string };

// A line element breaks before it only: "</li><li>" is one line break, not a blank line.
function tagSeparator(name: string, isClosing: boolean): string {
  if (PARAGRAPH_ELEMENTS.has(name)) return '\n\n';
  if (LINE_ELEMENTS.has(name)) return isClosing ? '' : '\n';
  if (CELL_ELEMENTS.has(name)) return ' ';
  return '';
}

export function htmlToText(html: string): string {
  const pieces: Piece[] = [];
  let preDepth = 0;
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf('<', at);
    const textEnd = open === -1 ? html.length : open;
    if (textEnd > at) pieces.push({ text: html.slice(at, textEnd), isPreformatted: preDepth > 0 });
    if (open === -1) break;

    if (html.startsWith('<!--', open)) {
      const close = html.indexOf('-->', open + 4);
      at = close === -1 ? html.length : close + 3;
      continue;
    }
    // Doctype, CDATA, processing instructions.
    if (html[open + 1] === '!' || html[open + 1] === '?') {
      at = endOfTag(html, open + 2);
      continue;
    }
    TAG_NAME.lastIndex = open;
    const tag = TAG_NAME.exec(html);
    if (!tag) {
      pieces.push({ text: '<', isPreformatted: preDepth > 0 });
      at = open + 1;
      continue;
    }
    const isClosing = tag[1] === '/';
    const name = (tag[2] ?? '').toLowerCase();
    at = endOfTag(html, TAG_NAME.lastIndex);
    if (!isClosing && DROPPED_ELEMENTS.has(name) && !html.slice(open, at).endsWith('/>')) {
      at = endOfDroppedElement(html, name, at);
      continue;
    }
    if (name === 'pre') preDepth = Math.max(preDepth + (isClosing ? -1 : 1), 0);
    const separator = tagSeparator(name, isClosing);
    if (separator) pieces.push({ separator });
  }

  const joined = pieces
    .map((piece) => {
      if ('separator' in piece) return piece.separator;
      const text = decodeEntities(piece.text);
      // Outside <pre>, a line break in the source is just a space.
      return piece.isPreformatted ? text.replace(/\r\n?/g, '\n') : text.replace(/\s+/g, ' ');
    })
    .join('');
  return tidyLines(joined);
}

// Spaces collapsed and trimmed on every line, at most one blank line in a row.
function tidyLines(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

// Neither part may contain a bracket or parenthesis of its kind, which keeps the match linear.
const IMAGE = /!\[[^[\]\n]*\](?:\([^()\n]*\)|\[[^[\]\n]*\])/g;
const LINK = /\[([^[\]\n]*)\](?:\([^()\n]*\)|\[[^[\]\n]*\])/g;
const LINK_DEFINITION = /^ {0,3}\[[^[\]\n]+\]:/;
const ATX_HEADING = /^ {0,3}#{1,6}(?=[ \t]|$)/;
const SETEXT_UNDERLINE = /^ {0,3}(?:=+|-{2,})[ \t]*$/;
const CODE_FENCE = /^ {0,3}(?:```|~~~)/;

// "## Title ##" → "Title". By hand: a regex for the closing hashes would backtrack on long lines.
function headingText(line: string, marker: string): string {
  let text = line.slice(marker.length).trim();
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end -= 1;
  if (end === 0 || /\s/.test(text[end - 1] ?? '')) text = text.slice(0, end).trim();
  return text;
}

export function markdownToText(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let isInCode = false;
  for (const line of lines) {
    // Code stays as written: a "# comment" in it is no heading.
    if (CODE_FENCE.test(line)) isInCode = !isInCode;
    if (isInCode) {
      out.push(line);
      continue;
    }
    if (LINK_DEFINITION.test(line)) continue;
    const heading = ATX_HEADING.exec(line);
    if (heading) {
      // Its own paragraph, so chunks break at headings rather than inside them.
      out.push('', headingText(line, heading[0]), '');
      continue;
    }
    // The title above it is already a line of its own; the underline (or a rule) is no text.
    if (SETEXT_UNDERLINE.test(line)) {
      out.push('');
      continue;
    }
    out.push(line.replace(IMAGE, '').replace(LINK, '$1'));
  }
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

// `start` is where the unit's text sits in the normalized text: each unit is a piece of it as is.
type Unit = { text: string; words: number; separator: string; start: number };

function normalize(text: string): string {
  return (
    text
      .replace(/\r\n?/g, '\n')
      // Postgres text cannot hold NUL; other control characters are noise.
      .replace(/[^\P{Cc}\n\t]/gu, ' ')
      .replace(LONG_WORD, (word) => (word.match(WORD_PIECE) ?? []).join(' '))
      .split('\n')
      .map((line) => line.replace(/\s+/g, ' ').trim())
      .join('\n')
  );
}

// Page by page, each page's text on lines of its own, so no word or line runs across a page
// break and every normalized offset belongs to one page. Answers where each page now begins.
function normalizePages(
  text: string,
  pageStarts: number[] | undefined,
): { text: string; pageStarts: number[] | undefined } {
  if (!pageStarts || pageStarts.length === 0) return { text: normalize(text), pageStarts };
  const pieces: string[] = [];
  const starts: number[] = [];
  let length = 0;
  // Kept apart rather than read back from the text built so far: asking a string being built
  // by concatenation for its last character flattens it, once a page, quadratic in the pages.
  let endsWithBreak = true;
  for (const [page, start] of pageStarts.entries()) {
    const pageText = normalize(text.slice(start, pageStarts[page + 1] ?? text.length));
    // A line break only where the text has none: a paragraph may go on over the page.
    if (!endsWithBreak && !pageText.startsWith('\n')) {
      pieces.push('\n');
      length += 1;
    }
    starts.push(length);
    pieces.push(pageText);
    length += pageText.length;
    if (pageText) endsWithBreak = pageText.endsWith('\n');
  }
  return { text: pieces.join(''), pageStarts: starts };
}

// The last page that begins at or before `offset`: pages without text begin where the next
// one does, and hold none of it.
function pageAt(pageStarts: number[], offset: number): number {
  let low = 0;
  let high = pageStarts.length - 1;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if ((pageStarts[middle] ?? 0) <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

function splitIntoWordRuns(sentence: string, maxWords: number, first: string, start: number) {
  const words = sentence.split(' ');
  const units: Unit[] = [];
  let at = start;
  for (let from = 0; from < words.length; from += maxWords) {
    const run = words.slice(from, from + maxWords);
    const text = run.join(' ');
    units.push({ text, words: run.length, separator: from === 0 ? first : ' ', start: at });
    at += text.length + 1;
  }
  return units;
}

// Paragraphs first; one too long for a chunk splits into sentences (and lines), and a sentence
// still too long into runs of words. No unit is longer than `maxWords`.
function splitIntoUnits(text: string, maxWords: number): Unit[] {
  const units: Unit[] = [];
  // The captured breaks between paragraphs keep every piece's place in the text known.
  const pieces = text.split(/(\n{2,})/);
  let at = 0;
  for (const [position, paragraph] of pieces.entries()) {
    const paragraphStart = at;
    at += paragraph.length;
    if (position % 2 === 1) continue;
    const block = paragraph.trim();
    if (!block) continue;
    const blockStart = paragraphStart + paragraph.length - paragraph.trimStart().length;
    const words = countWords(block);
    if (words <= maxWords) {
      units.push({ text: block, words, separator: '\n\n', start: blockStart });
      continue;
    }
    // A sentence ends at . ! or ? (and a closing quote or bracket) before a space; a line break
    // ends one too. The captured separators keep lists as lists.
    const parts = block.split(/((?<=[.!?]["'”’)\]]?) |\n)/);
    let separator = '\n\n';
    let sentenceStart = blockStart;
    for (let index = 0; index < parts.length; index += 2) {
      const sentence = parts[index] ?? '';
      if (sentence) {
        const sentenceWords = countWords(sentence);
        if (sentenceWords <= maxWords) {
          units.push({ text: sentence, words: sentenceWords, separator, start: sentenceStart });
        } else units.push(...splitIntoWordRuns(sentence, maxWords, separator, sentenceStart));
      }
      separator = parts[index + 1] ?? ' ';
      sentenceStart += sentence.length + separator.length;
    }
  }
  return units;
}

// A stretch of a chunk's content that is the normalized text as is: `at` in the content,
// `start` in the text. Separators between them are the chunker's own.
type Span = { at: number; start: number; length: number };

// The last `words` words of a chunk, with the spacing they had, and where they came from.
function tailOf(
  content: string,
  spans: Span[],
  words: number,
): { text: string; words: number; spans: Span[] } {
  if (words <= 0) return { text: '', words: 0, spans: [] };
  const starts = [...content.matchAll(/\S+/g)].map((match) => match.index);
  const from = starts[Math.max(starts.length - words, 0)] ?? 0;
  // A word never begins in a separator, so `from` falls inside a span.
  const kept = spans.flatMap((span) => {
    if (span.at + span.length <= from) return [];
    const cut = Math.max(from - span.at, 0);
    return [{ at: span.at + cut - from, start: span.start + cut, length: span.length - cut }];
  });
  return { text: content.slice(from), words: Math.min(words, starts.length), spans: kept };
}

// Splits text into chunks of at most `targetTokens` (estimated, see estimateTokens), breaking at
// paragraphs and headings where it can, then at sentences, then between words. Each chunk after
// the first begins with the last `overlapTokens` worth of words of the one before, so a passage
// cut by a boundary is whole in one of them. Empty text gives no chunks. With `pageStarts`, each
// chunk is given the page its first word is on (an overlap's, so a passage cited is found where
// it begins), and a page break always breaks a line.
export function chunkText(text: string, options: ChunkOptions = {}): TextChunk[] {
  const targetTokens = options.targetTokens ?? DEFAULT_TARGET_TOKENS;
  const overlapTokens = options.overlapTokens ?? DEFAULT_OVERLAP_TOKENS;
  const maxWords = wordsWithin(targetTokens);
  const overlapWords = wordsWithin(Math.max(overlapTokens, 0));
  // Units leave room for a full overlap in front of them.
  const unitWords = maxWords - overlapWords;
  if (unitWords < 1) {
    throw new RangeError('chunkText: targetTokens must leave room for more than the overlap');
  }

  const normalized = normalizePages(text, options.pageStarts);
  const pageStarts = normalized.pageStarts;
  const chunks: TextChunk[] = [];
  let content = '';
  let words = 0;
  let spans: Span[] = [];
  const emit = () => {
    const chunk: TextChunk = { index: chunks.length, content, tokenCount: estimateTokens(words) };
    if (pageStarts) chunk.page = pageAt(pageStarts, spans[0]?.start ?? 0);
    chunks.push(chunk);
  };
  for (const unit of splitIntoUnits(normalized.text, unitWords)) {
    // A chunk that just took its overlap always takes the next unit too: units leave room for it.
    if (content && words + unit.words > maxWords) {
      emit();
      ({ text: content, words, spans } = tailOf(content, spans, overlapWords));
    }
    const at = content ? content.length + unit.separator.length : 0;
    content = content ? `${content}${unit.separator}${unit.text}` : unit.text;
    spans.push({ at, start: unit.start, length: unit.text.length });
    words += unit.words;
  }
  if (content) emit();
  return chunks;
}
