import { useEffect, useMemo, useState } from 'preact/hooks';

type Render = (text: string) => string;

// How long a Copy button says what happened before it reads "Copy" again.
const COPIED_MS = 2000;

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
  // A streaming reply renders again with each piece; the rest of the chat does not re-render it.
  const html = useMemo(() => renderer?.(text), [renderer, text]);
  if (html === undefined) return <p class="msg-text">{text}</p>;
  // The HTML is renderMarkdown's: markdown-it without raw HTML, then DOMPurify. The click
  // listener only delegates: the clicks are the Copy buttons' (a key press on a button is one).
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions lint/a11y/useKeyWithClickEvents: see above
    <div class="msg-text markdown" onClick={copyCode} dangerouslySetInnerHTML={{ __html: html }} />
  );
}
