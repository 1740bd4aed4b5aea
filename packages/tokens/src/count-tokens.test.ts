import { describe, expect, it } from 'vitest';
import { estimateTokens, loadTokenCounter } from './count-tokens';

const JAPANESE = '私の好きな色は紫です。';

describe('loadTokenCounter', () => {
  it('counts exactly with OpenAI encodings', async () => {
    const o200k = await loadTokenCounter('o200k_base');
    const cl100k = await loadTokenCounter('cl100k_base');

    expect(o200k.count('My favourite colour is purple.')).toBe(6);
    expect(o200k.count(JAPANESE)).toBe(9);
    expect(cl100k.count(JAPANESE)).toBe(11);
    expect(o200k.count('')).toBe(0);
  });

  it('counts Llama 3 as cl100k_base, and Claude and unknown models with their safety factor', async () => {
    const llama3 = await loadTokenCounter('llama3');
    const claude = await loadTokenCounter('claude');
    const unknown = await loadTokenCounter('unknown');

    expect(llama3.count(JAPANESE)).toBe(11);
    // o200k_base 9 × 1.3, cl100k_base 11 × 1.3, rounded up.
    expect(claude.count(JAPANESE)).toBe(12);
    expect(unknown.count(JAPANESE)).toBe(15);
  });

  it('takes special-token markers in the user text as text', async () => {
    const counter = await loadTokenCounter('o200k_base');

    expect(counter.count('say <|endoftext|> twice <|im_start|>')).toBeGreaterThan(10);
  });

  it('estimates four characters a token when no model is known', async () => {
    const counter = await loadTokenCounter('estimate');

    expect(counter.count('abcdefghi')).toBe(3);
    expect(counter.count(JAPANESE)).toBe(estimateTokens(JAPANESE));
    expect(estimateTokens(JAPANESE)).toBe(3);
  });
});
