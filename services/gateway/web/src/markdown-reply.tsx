import { useEffect, useMemo, useRef, useState } from 'preact/hooks';

type Render = (text: string) => string;

// How long a Copy button says what happened before it reads "Copy" again.
const COPIED_MS = 2000;
// A streaming reply is rendered again at most this often. Each rendering parses the whole reply
// (several ms for a long one with code on a laptop, more on a phone), and pieces can come dozens
// of times a second.
const RENDER_EVERY_MS = 100;

// The renderer (markdown-it, highlight.js and DOMPurify) is a chunk of its own, three times the
// size of the rest of the app: asked for as soon as the app starts, so sign-in and the first
// paint do not wait for it. Until it is here a reply shows as plain text, as before Markdown.
let render: Render | undefined;
const loaded: Promise<Render> = import('./markdown-render').then((module) => {
  render = module.renderMarkdown;
  return module.renderMarkdown;
});

function useRenderer(): Render | undefined {
  const [current, setCurrent] = useState(() => render);
  useEffect(() => {
    if (current) return;
    let isMounted = true;
    loaded.then(
      (loadedRender) => {
        if (isMounted) setCurrent(() => loadedRender);
      },
      () => {
        // Not loaded (offline before it was ever cached): replies stay plain text.
      },
    );
    return () => {
      isMounted = false;
    };
  }, [current]);
  return current;
}

// The text to render: the latest one, but no sooner than RENDER_EVERY_MS after the last
// rendering; the last piece of a stream shows at most that much later.
function useThrottledText(text: string): string {
  const [shown, setShown] = useState(text);
  const renderedAt = useRef(0);
  useEffect(() => {
    if (text === shown) return;
    const show = () => {
      renderedAt.current = Date.now();
      setShown(text);
    };
    const wait = renderedAt.current + RENDER_EVERY_MS - Date.now();
    if (wait <= 0) {
      show();
      return;
    }
    const timer = setTimeout(show, wait);
    return () => clearTimeout(timer);
  }, [text, shown]);
  return shown;
}

// One listener for every Copy button of a reply, as the buttons arrive in HTML (set anew as a
// reply streams in) and the page's policy refuses inline handlers.
function copyCode(event: MouseEvent): void {
  const target = event.target;
  if (!(target instanceof Element)) return;
  const button = target.closest('button.code-copy');
  const code = button?.closest('.code-block')?.querySelector('pre code');
  if (!button || !code) return;
  const say = (label: string) => {
    button.textContent = label;
    setTimeout(() => {
      button.textContent = 'Copy';
    }, COPIED_MS);
  };
  // The clipboard API exists only in a secure context (https, or localhost): elsewhere the code
  // is selected, for the user to copy.
  if (!navigator.clipboard) {
    window.getSelection()?.selectAllChildren(code);
    say('Selected');
    return;
  }
  // Without the line break that ends every code block's text.
  navigator.clipboard.writeText((code.textContent ?? '').replace(/\n$/, '')).then(
    () => say('Copied'),
    () => say('Copy failed'),
  );
}

/** An assistant's reply, its Markdown rendered (src/markdown.ts and src/markdown-render.ts say what is let through). */
export function MarkdownReply({ text }: { text: string }) {
  const renderer = useRenderer();
  const shown = useThrottledText(text);
  // Rendered again only when its text changes, not when the rest of the chat does.
  const html = useMemo(() => renderer?.(shown), [renderer, shown]);
  if (html === undefined) return <p class="msg-text">{text}</p>;
  // The HTML is renderMarkdown's: markdown-it without raw HTML, then DOMPurify. The click
  // listener only delegates: the clicks are the Copy buttons' (a key press on a button is one).
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: see above
    <div class="msg-text markdown" onClick={copyCode} dangerouslySetInnerHTML={{ __html: html }} />
  );
}
