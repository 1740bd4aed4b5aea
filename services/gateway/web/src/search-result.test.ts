import { describe, expect, it } from 'vitest';
import { describeDocumentHit } from './search-result';

const hit = (kind: 'document' | 'message', metadata: Record<string, unknown>) => ({
  kind,
  id: '00000000-0000-4000-8000-000000000001',
  score: 0.5,
  text: 'Descale yearly.',
  createdAt: '2026-11-29T00:00:00.000Z',
  conversationId: null,
  metadata,
});

describe('describeDocumentHit', () => {
  it("names a document hit's title, and its page when it has one", () => {
    expect(describeDocumentHit(hit('document', { title: 'Boiler manual', page: 3 }))).toBe(
      'Boiler manual, page 3',
    );
    expect(describeDocumentHit(hit('document', { title: 'Notes', chunkIndex: 0 }))).toBe('Notes');
  });

  it('says nothing for other kinds, or metadata that is not what memory writes', () => {
    expect(describeDocumentHit(hit('message', { title: 'x', page: 1 }))).toBeUndefined();
    expect(describeDocumentHit(hit('document', { page: 1 }))).toBeUndefined();
    expect(describeDocumentHit(hit('document', { title: 'T', page: '1' }))).toBe('T');
  });
});
