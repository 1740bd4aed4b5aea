import { describe, expect, it } from 'vitest';
import { escapeHtml, splitForTelegram, TELEGRAM_MESSAGE_MAX } from './telegram-html';

const unescapeHtml = (html: string) =>
  html
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&amp;', '&');

describe('escapeHtml', () => {
  it('leaves no markup of the text: tags, entities and quotes are shown as written', () => {
    expect(escapeHtml('<b>bold</b> & "quoted" &amp;')).toBe(
      '&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot; &amp;amp;',
    );
  });
});

describe('splitForTelegram', () => {
  it('sends a short text as one escaped part', () => {
    expect(splitForTelegram('1 < 2 & 3')).toEqual(['1 &lt; 2 &amp; 3']);
  });

  it('cuts a long text at paragraph breaks, each part within the limit once escaped', () => {
    const paragraph = `${'word '.repeat(300).trim()}.`;
    const text = Array.from({ length: 6 }, () => paragraph).join('\n\n');

    const parts = splitForTelegram(text);

    // Two paragraphs (3,002 characters) fit in a part, three do not.
    expect(parts.length).toBe(3);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_MAX);
    for (const part of parts) expect(part.endsWith('.')).toBe(true);
    expect(parts.map(unescapeHtml).join('\n\n')).toBe(text);
  });

  it('measures the escaped text, so a text full of "<" still fits, and never cuts an entity', () => {
    const text = '<'.repeat(5_000);

    const parts = splitForTelegram(text, 4_096);

    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(4_096);
      expect(part).toMatch(/^(&lt;)+$/);
    }
    expect(parts.map(unescapeHtml).join('')).toBe(text);
  });

  it('cuts a text without spaces hard, and never inside a surrogate pair', () => {
    const text = '😀'.repeat(3_000);

    const parts = splitForTelegram(text, 4_096);

    expect(parts.length).toBe(2);
    expect(parts.join('')).toBe(text);
    for (const part of parts) expect(part).toMatch(/^(😀)+$/u);
  });
});
