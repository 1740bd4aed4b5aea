import DOMPurify from 'dompurify';
import { isSameOriginPath, markdownToHtml } from './markdown';

// The second half of a reply's rendering, in the browser (DOMPurify needs a DOM): markdown.ts's
// rules again, for whatever markdown-it let through by mistake: only our links and
// same-origin images, no style attributes, no SVG or MathML (they carry their own script and
// style elements), no forms. Buttons stay: raw HTML never reaches here, so the only ones are the
// Copy buttons of markdown.ts's code blocks.
const PURIFY = {
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|\/(?![/\\]))/i,
  ADD_ATTR: ['target'],
  ALLOW_DATA_ATTR: false,
  FORBID_ATTR: ['style'],
  FORBID_TAGS: ['style', 'svg', 'math', 'form', 'input', 'textarea', 'select'],
};

// Every link that survives opens in a new tab without an opener or a referrer, whatever its
// markup said; an image keeps its source only if that is a path here (DOMPurify allows data:
// images whatever ALLOWED_URI_REGEXP says).
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    if (node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    } else {
      node.removeAttribute('target');
    }
  } else if (node.tagName === 'IMG' && !isSameOriginPath(node.getAttribute('src') ?? '')) {
    node.removeAttribute('src');
  }
});

/** A reply as safe HTML, to set as innerHTML. */
export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(markdownToHtml(text), PURIFY);
}
