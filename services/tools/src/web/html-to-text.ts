import { Parser } from 'htmlparser2';

export type PageText = { title: string | undefined; text: string };

// Their content is code, styling or media, never text a reader sees.
const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'canvas',
  'iframe',
  'object',
  'select',
]);
// Elements a browser lays out as blocks of their own: paragraphs get a blank line around them,
// lines (list items, table rows, divisions) only a line break.
const PARAGRAPHS = new Set(['blockquote', 'dl', 'figure', 'hr', 'ol', 'p', 'pre', 'table', 'ul']);
const LINES = new Set([
  'address',
  'article',
  'aside',
  'dd',
  'details',
  'div',
  'dt',
  'figcaption',
  'footer',
  'form',
  'header',
  'li',
  'main',
  'nav',
  'section',
  'summary',
  'tr',
]);
const HEADINGS: Record<string, string> = {
  h1: '#',
  h2: '##',
  h3: '###',
  h4: '####',
  h5: '#####',
  h6: '######',
};

// Readable text of an HTML page: what a reader sees, one block per line, headings and list items
// marked as in Markdown. Text a browser would not show (scripts, styles, `hidden`, display:none)
// is dropped: pages hide instructions for models there.
export function htmlToText(html: string): PageText {
  const parts: string[] = [];
  let title: string | undefined;
  let titleText: string[] | undefined;
  // One entry per open element: whether it hides its content, whether it keeps whitespace.
  const open: { isHidden: boolean; isPre: boolean }[] = [];
  let hiddenDepth = 0;
  let preDepth = 0;
  // The last character written, and how many line breaks end the text so far: whitespace and
  // blank lines never double up where elements meet.
  let last = '\n';
  let trailingBreaks = 0;

  const append = (text: string) => {
    if (text === '') return;
    parts.push(text);
    last = text.at(-1) ?? last;
    const breaks = text.length - text.replace(/\n+$/, '').length;
    trailingBreaks = breaks === text.length ? trailingBreaks + breaks : breaks;
  };
  const breakBlock = (name: string) => {
    const wanted = PARAGRAPHS.has(name) || HEADINGS[name] ? 2 : LINES.has(name) ? 1 : 0;
    if (parts.length > 0 && wanted > trailingBreaks) append('\n'.repeat(wanted - trailingBreaks));
  };

  const parser = new Parser(
    {
      onopentag(name, attributes) {
        const isHidden =
          SKIPPED.has(name) ||
          attributes.hidden !== undefined ||
          attributes['aria-hidden'] === 'true' ||
          /display\s*:\s*none|visibility\s*:\s*hidden/i.test(attributes.style ?? '');
        const isPre = name === 'pre' || name === 'textarea';
        open.push({ isHidden, isPre });
        if (isHidden) hiddenDepth += 1;
        if (isPre) preDepth += 1;
        if (hiddenDepth > 0) return;
        if (name === 'title' && title === undefined) titleText = [];
        else if (name === 'br') append('\n');
        else {
          breakBlock(name);
          if (HEADINGS[name]) append(`${HEADINGS[name]} `);
          else if (name === 'li') append('- ');
          else if ((name === 'td' || name === 'th') && last !== '\n') append(' | ');
        }
      },
      onclosetag(name) {
        const element = open.pop();
        if (element?.isHidden) hiddenDepth -= 1;
        if (element?.isPre) preDepth -= 1;
        if (hiddenDepth > 0) return;
        if (name === 'title' && titleText) {
          title = collapse(titleText.join('')).trim() || undefined;
          titleText = undefined;
        } else breakBlock(name);
      },
      ontext(data) {
        if (hiddenDepth > 0) return;
        if (titleText) {
          titleText.push(data);
          return;
        }
        if (preDepth > 0) {
          append(data);
          return;
        }
        const text = collapse(data);
        append(/\s/.test(last) ? text.trimStart() : text);
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);

  const text = parts
    .join('')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title, text };
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ');
}
