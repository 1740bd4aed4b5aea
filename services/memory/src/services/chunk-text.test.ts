import { describe, expect, it } from 'vitest';
import { chunkText, estimateTokens, htmlToText, markdownToText } from './chunk-text';

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

// `count` numbered words ("w0 w1 …") ending in a full stop: easy to follow through the chunks.
function sentence(prefix: string, count: number): string {
  return `${Array.from({ length: count }, (_, index) => `${prefix}${index}`).join(' ')}.`;
}

describe('estimateTokens', () => {
  it('is ceil(words × 1.3), without floating-point surprises', () => {
    expect(estimateTokens(0)).toBe(0);
    expect(estimateTokens(1)).toBe(2);
    expect(estimateTokens(3)).toBe(4);
    expect(estimateTokens(10)).toBe(13);
    expect(estimateTokens(20)).toBe(26);
    expect(estimateTokens(307)).toBe(400);
    expect(estimateTokens(308)).toBe(401);
  });
});

describe('htmlToText', () => {
  it('keeps the text of a page and its paragraph structure', () => {
    const html = `<!DOCTYPE html>
      <html><head><title>Page title</title><meta charset="utf-8"></head>
      <body>
        <h1>Release   notes</h1>
        <p>First <b>bold</b>ly
        wrapped line.<br>Second line.</p>
        <div>A <a href="https://example.com" title="a > b">link</a> here</div>
        <ul><li>one</li><li>two</li></ul>
        <table><tr><th>Name</th><th>Age</th></tr><tr><td>Ada</td><td>36</td></tr></table>
      </body></html>`;

    expect(htmlToText(html)).toBe(
      [
        'Release notes',
        '',
        'First boldly wrapped line.',
        'Second line.',
        '',
        'A link here',
        '',
        'one',
        'two',
        '',
        'Name Age',
        'Ada 36',
      ].join('\n'),
    );
  });

  it('drops script, style, noscript and head content and comments, even unclosed ones', () => {
    const html = `<head><script>var head = 1;</script></head>
      <p>kept</p>
      <SCRIPT type="text/javascript">if (a < b && c > d) { document.write("<p>no</p>"); }</SCRIPT>
      <style>p { color: red; }</style>
      <noscript>Enable JavaScript</noscript>
      <!-- a comment with <p>markup</p> -->
      <p>also kept</p>
      <script>never closed <p>gone</p>`;

    expect(htmlToText(html)).toBe('kept\n\nalso kept');
  });

  it('treats a head without its closing tag as ending where the body starts', () => {
    expect(htmlToText('<html><head><title>T</title><body><p>Body text</p>')).toBe('Body text');
  });

  it('decodes named and numeric entities once, so escaped markup stays text', () => {
    const html =
      '<p>Fish &amp; chips &lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot; &#39;a&#39; ' +
      '&#x263A; &#9731; &eacute;x &amp;lt; a&nbsp;b &copy; &#0; &#x110000;</p>';

    expect(htmlToText(html)).toBe(
      'Fish & chips <script>alert(1)</script> "q" \'a\' ☺ ☃ &eacute;x &lt; a b © \ufffd \ufffd',
    );
  });

  it('keeps line breaks inside <pre>', () => {
    expect(htmlToText('<p>code:</p><pre>line one\n  line two</pre>')).toBe(
      'code:\n\nline one\nline two',
    );
  });

  it('leaves a lone < and unknown syntax as text, and an unclosed tag swallows the rest', () => {
    expect(htmlToText('<p>1 < 2 and 3<4</p>')).toBe('1 < 2 and 3<4');
    expect(htmlToText('<p>before</p><img src="x" alt="never closed')).toBe('before');
  });

  it('is empty for markup without text', () => {
    expect(htmlToText('<html><head><title>x</title></head><body><br><div> </div></body>')).toBe('');
  });

  it('runs in linear time on hostile input', () => {
    const started = Date.now();
    htmlToText('<a '.repeat(200_000));
    htmlToText('<a "'.repeat(200_000));
    htmlToText(`<p ${'x="'.repeat(200_000)}`);
    htmlToText('<script>'.repeat(100_000));
    htmlToText('&#'.repeat(200_000));

    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('markdownToText', () => {
  it('keeps heading and link text and drops images and link definitions', () => {
    const markdown = [
      '# Getting started #',
      'Install it with the [package manager](https://example.com "title").',
      '![diagram](img/arch.png) See the [guide][docs] too.',
      '[![badge](badge.svg)](https://ci)',
      '',
      '[docs]: https://example.com/docs',
      'Setup',
      '-----',
      '## Usage',
      'Run `jarvis`.',
    ].join('\n');

    expect(markdownToText(markdown)).toBe(
      'Getting started\n\nInstall it with the package manager.\n See the guide too.\n\n' +
        'Setup\n\nUsage\n\nRun `jarvis`.',
    );
  });

  it('leaves fenced code alone', () => {
    const markdown = ['```bash', '# not a heading', '[x](y)', '```', '#tag is no heading'].join(
      '\n',
    );

    expect(markdownToText(markdown)).toBe(markdown);
  });

  it('runs in linear time on hostile input', () => {
    const started = Date.now();
    markdownToText('['.repeat(500_000));
    markdownToText('[a]('.repeat(200_000));
    markdownToText(`#${' '.repeat(500_000)}x`);
    markdownToText(`${'='.repeat(500_000)}x`);

    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('chunkText', () => {
  it('gives no chunks for empty or blank text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n\t \r\n')).toEqual([]);
  });

  it('keeps a short text as one chunk, tidied', () => {
    expect(chunkText('  Hello   world.\r\n\r\n\r\nSecond\tparagraph.  ')).toEqual([
      { index: 0, content: 'Hello world.\n\nSecond paragraph.', tokenCount: 6 },
    ]);
  });

  it('packs whole paragraphs into chunks within the target, overlapping by about the overlap', () => {
    const text = Array.from({ length: 8 }, (_, index) => sentence(`p${index}w`, 120)).join('\n\n');

    const chunks = chunkText(text);

    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.map((chunk) => chunk.index)).toEqual(chunks.map((_, index) => index));
    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(400);
      expect(chunk.tokenCount).toBe(estimateTokens(words(chunk.content).length));
    }
    // 60 tokens is 46 words: each chunk starts with the last 46 words of the one before.
    for (let index = 1; index < chunks.length; index++) {
      const previous = words(chunks[index - 1]?.content ?? '');
      const current = words(chunks[index]?.content ?? '');
      expect(current.slice(0, 46)).toEqual(previous.slice(-46));
      expect(estimateTokens(46)).toBeLessThanOrEqual(60);
    }
    // Apart from the overlap, chunks break between paragraphs: every paragraph is whole in one.
    for (let paragraph = 0; paragraph < 8; paragraph++) {
      const whole = sentence(`p${paragraph}w`, 120);
      expect(chunks.some((chunk) => chunk.content.includes(whole))).toBe(true);
    }
    // Every word of the text is in some chunk, in order.
    const covered = chunks.flatMap((chunk, index) =>
      words(chunk.content).slice(index === 0 ? 0 : 46),
    );
    expect(covered).toEqual(words(text));
  });

  it('splits a paragraph too long for a chunk at sentences', () => {
    const paragraph = Array.from({ length: 30 }, (_, index) => sentence(`s${index}w`, 20)).join(
      ' ',
    );

    const chunks = chunkText(paragraph, { targetTokens: 100, overlapTokens: 13 });

    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(100);
      // The new text of each chunk (after its 10 overlap words) ends at a sentence's end.
      expect(chunk.content.endsWith('.')).toBe(true);
    }
  });

  it('splits a sentence too long for a chunk between words', () => {
    const text = sentence('w', 1_000);

    const chunks = chunkText(text, { targetTokens: 130, overlapTokens: 13 });

    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(130);
      expect(words(chunk.content).length).toBeLessThanOrEqual(100);
    }
    const covered = chunks.flatMap((chunk, index) =>
      words(chunk.content).slice(index === 0 ? 0 : 10),
    );
    expect(covered).toEqual(words(text));
  });

  it('breaks a run of characters without spaces into pieces, so no chunk grows unbounded', () => {
    const blob = 'x'.repeat(100_000);

    const chunks = chunkText(`Data: ${blob}`);

    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(400);
      expect(chunk.content.length).toBeLessThan(40_000);
    }
    expect(chunks.map((chunk) => chunk.content).join(' ')).toContain('x'.repeat(100));
  });

  it('replaces NUL and other control characters, which Postgres text cannot hold', () => {
    expect(chunkText('a\u0000b\u0007c')).toEqual([{ index: 0, content: 'a b c', tokenCount: 4 }]);
  });

  it('is deterministic', () => {
    const text = Array.from({ length: 50 }, (_, index) => sentence(`d${index}w`, 37)).join('\n\n');

    expect(chunkText(text)).toEqual(chunkText(text));
  });

  it('refuses options that leave no room beyond the overlap', () => {
    expect(() => chunkText('text', { targetTokens: 60, overlapTokens: 60 })).toThrow(RangeError);
  });
});

describe('chunkText with pages', () => {
  // Page n's words are "n:<i>"; so the page a word is on can be read off the word.
  function pageOfWord(word: string): number {
    return Number(word.split(':')[0]);
  }

  // Pages of paragraphs, sentences and runs of very different lengths, joined the way extracted
  // PDF text is: sometimes a blank line between pages, sometimes a line break, sometimes nothing
  // at all (a paragraph that goes on over the page).
  function pagedText(pageCount: number): { text: string; pageStarts: number[] } {
    let text = '';
    const pageStarts: number[] = [];
    const joins = ['\n\n', '\n', '', ' '];
    for (let page = 1; page <= pageCount; page++) {
      if (page > 1) text += joins[page % joins.length];
      pageStarts.push(text.length);
      const paragraphs = Array.from({ length: 1 + (page % 3) }, (_, paragraph) =>
        Array.from({ length: 1 + ((page * 7 + paragraph * 3) % 5) }, (_, index) =>
          sentence(`${page}:${paragraph}.${index}.`, 5 + ((page * 31 + index * 17) % 90)),
        ).join(' '),
      );
      text += paragraphs.join('\n\n');
    }
    return { text, pageStarts };
  }

  it('gives each chunk the page its first word is on, overlap included', () => {
    const { text, pageStarts } = pagedText(40);

    const chunks = chunkText(text, { pageStarts });

    expect(chunks.length).toBeGreaterThan(10);
    for (const chunk of chunks) {
      expect(chunk.page).toBe(pageOfWord(words(chunk.content)[0] ?? ''));
    }
    // Every page that begins a chunk is cited, and they only go forward.
    const pages = chunks.map((chunk) => chunk.page ?? 0);
    expect(pages).toEqual([...pages].sort((a, b) => a - b));
    expect(pages[0]).toBe(1);
  });

  it('with small chunks too, where a page starts many of them', () => {
    const { text, pageStarts } = pagedText(12);

    const chunks = chunkText(text, { pageStarts, targetTokens: 40, overlapTokens: 13 });

    expect(chunks.length).toBeGreaterThan(40);
    for (const chunk of chunks) {
      expect(chunk.page).toBe(pageOfWord(words(chunk.content)[0] ?? ''));
    }
    expect(new Set(chunks.map((chunk) => chunk.page))).toEqual(
      new Set(Array.from({ length: 12 }, (_, index) => index + 1)),
    );
  });

  it('never runs a word across a page break, even with nothing between the pages', () => {
    const chunks = chunkText('end of one.start of two', { pageStarts: [0, 11] });

    expect(chunks).toEqual([
      { index: 0, content: 'end of one.\nstart of two', tokenCount: 8, page: 1 },
    ]);
  });

  it('skips pages without text: a chunk is on the last page that begins where it does', () => {
    const text = '1:a 1:b\n\n3:c 3:d';
    // Page 2 is empty and so begins where page 3 does; page 4 is empty at the very end.
    const pageStarts = [0, 9, 9, text.length];

    const chunks = chunkText(text, { pageStarts, targetTokens: 3, overlapTokens: 0 });

    expect(chunks.map((chunk) => [chunk.content, chunk.page])).toEqual([
      ['1:a 1:b', 1],
      ['3:c 3:d', 3],
    ]);
  });

  it('chunks the same words as without pages when pages break between lines', () => {
    const text = Array.from({ length: 30 }, (_, index) => sentence(`${index + 1}:`, 70)).join('\n');
    const pageStarts = [...text.matchAll(/^/gm)].map((match) => match.index);

    const paged = chunkText(text, { pageStarts });

    expect(paged.map(({ page: _, ...chunk }) => chunk)).toEqual(chunkText(text));
    expect(chunkText(text).every((chunk) => chunk.page === undefined)).toBe(true);
  });

  it('takes time in proportion to the text, however many pages it has', () => {
    // 10,000 pages of one line each, the most a document may have, 2,000,000 characters.
    const page = 'word '.repeat(40);
    const text = page.repeat(10_000);
    const pageStarts = Array.from({ length: 10_000 }, (_, index) => index * page.length);

    const started = Date.now();
    const chunks = chunkText(text, { pageStarts });
    const paged = Date.now() - started;
    const plainStarted = Date.now();
    chunkText(text);
    const plain = Date.now() - plainStarted;

    expect(chunks.at(-1)?.page).toBeGreaterThan(9_900);
    // Quadratic in the pages, this took over 20 times as long as without them.
    expect(paged).toBeLessThan(Math.max(plain * 4, 1_000));
  });

  it('cuts a page of one endless word into pieces and still knows their page', () => {
    const text = `1:a ${'x'.repeat(1_000)}\n2:${'y'.repeat(1_000)}`;

    const chunks = chunkText(text, {
      pageStarts: [0, text.indexOf('2:')],
      targetTokens: 13,
      overlapTokens: 0,
    });

    for (const chunk of chunks) {
      expect(chunk.page).toBe(
        chunk.content.includes('y') || chunk.content.startsWith('2:') ? 2 : 1,
      );
    }
    expect(chunks.at(-1)?.page).toBe(2);
  });
});
