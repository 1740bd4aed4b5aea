// Telegram's HTML parse mode: everything Jarvis sends is escaped text, with only the markup
// Jarvis adds itself, so that a reply that contains "<", "&" or something that looks like a tag
// is shown as written and never refused by Telegram as bad markup.

// The longest text one sendMessage takes, in UTF-16 code units after entities are parsed.
export const TELEGRAM_MESSAGE_MAX = 4_096;

// The three characters Telegram's HTML mode reads as markup; a quote matters only inside an
// attribute (a link's href), so it is escaped too.
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

// Splits plain text into parts of at most `max` characters once escaped, preferring to cut at a
// paragraph, then a line, then a space, so that a long reply reads as several whole messages.
// Telegram counts the text after entities are parsed, but an escaped part is what is sent, and a
// cut inside "&amp;" would send a broken entity: parts are measured escaped and cut on raw text.
export function splitForTelegram(text: string, max = TELEGRAM_MESSAGE_MAX): string[] {
  const parts: string[] = [];
  let rest = text;
  while (escapeHtml(rest).length > max) {
    const cut = cutPoint(rest, max);
    const part = rest.slice(0, cut).trimEnd();
    if (part.length > 0) parts.push(part);
    rest = rest.slice(cut).replace(/^\s+/, '');
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts.map(escapeHtml);
}

// The longest prefix of `text` whose escaped form fits in `max`, moved back to a paragraph, line
// or word break when there is one in its second half, and never inside a surrogate pair.
function cutPoint(text: string, max: number): number {
  let fits = 0;
  let size = 0;
  for (const char of text) {
    const added = escapeHtml(char).length;
    if (size + added > max) break;
    size += added;
    fits += char.length;
  }
  const head = text.slice(0, fits);
  for (const separator of ['\n\n', '\n', ' ']) {
    const at = head.lastIndexOf(separator);
    if (at >= fits / 2) return at + separator.length;
  }
  return Math.max(fits, 1);
}
