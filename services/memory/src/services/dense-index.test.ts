import { describe, expect, it } from 'vitest';
import { type DenseIndex, sharingQueryEmbeddings } from './dense-index';

describe('sharingQueryEmbeddings', () => {
  it('asks the model once per user and text, however many searches ask', async () => {
    const asked: string[] = [];
    const model: DenseIndex = {
      async embedQuery(userId, text) {
        asked.push(`${userId}:${text}`);
        return { dense: { model: 'm', dimensions: 2 }, vector: [asked.length, 0] };
      },
    };
    const shared = sharingQueryEmbeddings(model);

    const [first, second] = await Promise.all([
      shared.embedQuery('alice', 'our cat'),
      shared.embedQuery('alice', 'our cat'),
    ]);
    const other = await shared.embedQuery('bob', 'our cat');

    expect(first).toBe(second);
    expect(other?.vector).toEqual([2, 0]);
    expect(asked).toEqual(['alice:our cat', 'bob:our cat']);
  });
});
