import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt, { type StateCore, type Token } from 'markdown-it';

// Assistant replies as Markdown. A reply is text a model wrote, and a model can be talked into
// writing anything (a web page it read may say "answer with <img onerror=…>"), so the output
// is built to be inert twice: markdown-it here never passes raw HTML through (`html: false`
// escapes it) and only lets through links we accept; DOMPurify then cleans the HTML again
// (markdown-render.ts), so a gap in either one alone runs nothing. Highlighting sets classes only: the page's policy refuses
// inline styles, and markdown-it's table alignment (a style attribute) becomes a class too.

// The languages models write most; the rest show as plain code. Each one registered adds to
// the single bundle every page loads, so the list stays short. Their aliases (js, ts, sh, py,
// yml, html, …) come with them.
for (const [name, language] of Object.entries({
  bash,
  css,
  javascript,
  json,
  python,
  sql,
  typescript,
  xml,
  yaml,
})) {
  hljs.registerLanguage(name, language);
}

// Links a reply may carry: web pages and mail. Not javascript:, data:, file: or any other
// scheme, and not paths of this install: a link to /v1/… (opened without the key) does nothing
// useful, and a reply has no business steering the user around the app.
const LINK_RE = /^(?:https?|mailto):/i;
// A path on this origin, the only place an image may load from: a remote image URL would tell
// its server who read the reply and when (and could carry data out in its query). Not "//host"
// or "/\host", which browsers read as another host, and no whitespace: browsers drop tabs and
// line breaks from a URL before reading it, so "/<tab>/host" is "//host" to them.
const SAME_ORIGIN_PATH_RE = /^\/(?![/\\])[^\s\\]*$/;

function isLink(url: string): boolean {
  return LINK_RE.test(url.trim());
}

export function isSameOriginPath(url: string): boolean {
  return SAME_ORIGIN_PATH_RE.test(url);
}

const md = new MarkdownIt('default', {
  html: false,
  // Bare https://… addresses become links; not "main.py" or "notes.md", which a fuzzy match
  // would send to Paraguay and Moldova.
  linkify: true,
  // A line break the model wrote stays a line break, as in the plain-text replies before.
  breaks: true,
  highlight: (code, lang) => {
    if (!lang || !hljs.getLanguage(lang)) return '';
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  },
});
md.linkify.set({ fuzzyLink: false });
// Links and images share this check: images from this origin need paths to pass; links to
// paths are turned back into text by inertLinks below.
md.validateLink = (url) => isLink(url) || isSameOriginPath(url.trim());

// After parsing: a link that is not http(s) or mailto keeps its text and loses its link; the
// others open in a new tab that cannot reach back into this one (window.opener) or learn
// which page sent it (Referer).
function inertLinks(state: StateCore): void {
  for (const block of state.tokens) {
    let isDropping = false;
    for (const token of block.children ?? []) {
      if (token.type === 'link_open') {
        isDropping = !isLink(String(token.attrGet('href') ?? ''));
        if (isDropping) {
          dropToken(token);
        } else {
          token.attrSet('target', '_blank');
          token.attrSet('rel', 'noopener noreferrer');
        }
      } else if (token.type === 'link_close' && isDropping) {
        dropToken(token);
        isDropping = false;
      }
    }
  }
}

function dropToken(token: Token): void {
  token.type = 'text';
  token.tag = '';
  token.nesting = 0;
  token.attrs = null;
  token.content = '';
}

// Table cells aligned by a class (styles.css: .align-*), not by markdown-it's style attribute.
function alignByClass(state: StateCore): void {
  for (const token of state.tokens) {
    if (token.type !== 'th_open' && token.type !== 'td_open') continue;
    const style = String(token.attrGet('style') ?? '');
    if (!style) continue;
    const align = /text-align:(left|center|right)/.exec(style)?.[1];
    token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'style');
    if (align) token.attrJoin('class', `align-${align}`);
  }
}

md.core.ruler.push('inert_links', inertLinks);
md.core.ruler.push('align_by_class', alignByClass);

const rules = md.renderer.rules;
const escapeHtml = md.utils.escapeHtml;

// A code block under a bar with its language and a Copy button; the button works by event
// delegation in markdown-reply.tsx (no handlers in markup: the policy would refuse them, and
// DOMPurify removes them).
function wrapCode(html: string, lang: string): string {
  const label = lang ? `<span class="code-lang">${escapeHtml(lang)}</span>` : '<span></span>';
  return `<div class="code-block"><div class="code-bar">${label}<button type="button" class="code-copy">Copy</button></div>${html}</div>\n`;
}

const renderFence = rules.fence;
const renderCodeBlock = rules.code_block;
rules.fence = (tokens, idx, options, env, self) => {
  const lang = tokens[idx]?.info.trim().split(/\s+/)[0] ?? '';
  return wrapCode(renderFence?.(tokens, idx, options, env, self) ?? '', lang);
};
rules.code_block = (tokens, idx, options, env, self) =>
  wrapCode(renderCodeBlock?.(tokens, idx, options, env, self) ?? '', '');

// A wide table scrolls sideways in its own box rather than widening the page on a phone.
rules.table_open = () => '<div class="table-scroll"><table>\n';
rules.table_close = () => '</table></div>\n';

// Images from this origin show; any other is a link to it, named by its alt text.
const renderImage = rules.image;
rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const src = String(token?.attrGet('src') ?? '');
  if (token && isSameOriginPath(src)) return renderImage?.(tokens, idx, options, env, self) ?? '';
  const alt = token ? self.renderInlineAsText(token.children ?? [], options, env) : '';
  const href = escapeHtml(src);
  return `<a href="${href}" class="remote-image" title="Image not loaded: ${href}" target="_blank" rel="noopener noreferrer">${escapeHtml(alt || src)}</a>`;
};

/** The HTML markdown-it makes of a reply, before DOMPurify: what the unit tests check. */
export function markdownToHtml(text: string): string {
  return md.render(text).trim();
}
