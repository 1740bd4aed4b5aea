import { describe, expect, it } from 'vitest';
import { pickEpisodesToShow } from './roll-up-episodes';

const range = (count: number) => Array.from({ length: count }, (_, index) => index);

describe('pickEpisodesToShow', () => {
  it('shows every episode of a quiet week, each whole', () => {
    expect(pickEpisodesToShow(range(3))).toEqual({ shown: [0, 1, 2], charsEach: 3_200 });
    expect(pickEpisodesToShow([])).toEqual({ shown: [], charsEach: 0 });
  });

  it('spreads a busy week over its days, within the bound of the prompt', () => {
    for (const count of [7, 8, 59, 60, 61, 150, 2_000]) {
      const { shown, charsEach } = pickEpisodesToShow(range(count));

      expect(shown).toHaveLength(Math.min(count, 60));
      expect(new Set(shown).size).toBe(shown.length);
      expect(shown.length * charsEach).toBeLessThanOrEqual(24_000);
      expect(charsEach).toBeGreaterThanOrEqual(400);
      // From the week's first episode to within one step of its last.
      expect(shown[0]).toBe(0);
      expect(shown.at(-1)).toBeGreaterThanOrEqual(count - Math.ceil(count / shown.length));
    }
  });
});
