import { describe, expect, it } from 'vitest';
import { snippetOf } from './search-snippet';

const join = ({ before, match, after }: { before: string; match: string; after: string }) =>
  before + match + after;

describe('snippetOf', () => {
  it('marks the first query word the text holds, as the text spells it', () => {
    expect(snippetOf('We booked the Zanzibar trip\nfor May.', 'zanzibar trip')).toEqual({
      before: 'We booked the ',
      match: 'Zanzibar',
      after: ' trip for May.',
    });
  });

  it('cuts a long text around the word, at word edges, with an ellipsis each side', () => {
    const words = Array.from({ length: 80 }, (_, index) => `word${index}`);
    words[50] = 'Kilimanjaro';
    const snippet = snippetOf(words.join(' '), 'kilimanjaro', 80);
    expect(snippet.match).toBe('Kilimanjaro');
    expect(snippet.before.startsWith('…word')).toBe(true);
    expect(snippet.after.endsWith('…')).toBe(true);
    expect(join(snippet).length).toBeLessThanOrEqual(82);
    // No word is cut in half.
    expect(join(snippet).replaceAll('…', '')).toMatch(/^word\d+ .* word\d+$/);
  });

  it('shows the start of a text the words are not in (a hit by meaning), and ignores short words', () => {
    const text = `Lunch plans: ${'pasta and salad '.repeat(20)}`;
    const snippet = snippetOf(text, 'is a meal', 40);
    expect(snippet.match).toBe('');
    expect(snippet.before.startsWith('Lunch plans: pasta')).toBe(true);
    expect(snippet.before.endsWith('…')).toBe(true);
    expect(snippet.before.length).toBeLessThanOrEqual(40);
    expect(snippetOf('short', 'of')).toEqual({ before: 'short', match: '', after: '' });
  });

  it('takes query characters literally', () => {
    expect(snippetOf('Costs (USD) rose', '(usd)').match).toBe('USD');
    expect(snippetOf('a.b.c', '.*').match).toBe('');
  });
});
