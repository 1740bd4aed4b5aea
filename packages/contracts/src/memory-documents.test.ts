import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DOCX_MEDIA_TYPE,
  DocumentIngestBody,
  MemoryDocumentsIngestRequest,
  PDF_MEDIA_TYPE,
} from './memory-documents';

const userId = randomUUID();
const base = { userId, title: 'Manual', contentType: PDF_MEDIA_TYPE };

function problems(input: unknown): string[] {
  const parsed = MemoryDocumentsIngestRequest.safeParse(input);
  return parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

describe('memory.documents.ingest', () => {
  it('takes extracted PDF and DOCX text, with where a PDF’s pages begin', () => {
    expect(problems({ ...base, content: 'one two', pageStarts: [0, 4] })).toEqual([]);
    expect(problems({ ...base, contentType: DOCX_MEDIA_TYPE, content: 'words' })).toEqual([]);
    // Empty pages: several begin at one offset, the last ones at the very end.
    expect(problems({ ...base, content: 'one', pageStarts: [0, 0, 3, 3] })).toEqual([]);
  });

  it('takes the content from a blob instead, never from both or neither', () => {
    expect(problems({ ...base, contentBlob: 'upload-1.text', pageStarts: [0, 9] })).toEqual([]);
    expect(problems({ ...base, content: 'x', contentBlob: 'upload-1.text' })).toEqual([
      'content: exactly one of content and contentBlob is required',
    ]);
    expect(problems(base)).toEqual(['content: exactly one of content and contentBlob is required']);
    expect(problems({ ...base, contentBlob: 'a\nb' })).toEqual([
      'contentBlob: must not contain control characters',
    ]);
  });

  it('refuses page offsets that cannot be a document’s pages', () => {
    expect(problems({ ...base, content: 'abc', pageStarts: [1] })).toEqual([
      'pageStarts: must begin with 0',
    ]);
    expect(problems({ ...base, content: 'abcdef', pageStarts: [0, 4, 2] })).toEqual([
      'pageStarts: must not decrease',
    ]);
    expect(problems({ ...base, content: 'abc', pageStarts: [0, 4] })).toEqual([
      'pageStarts: must not point past the end of content',
    ]);
    expect(problems({ ...base, content: 'abc', pageStarts: [] })).not.toEqual([]);
    expect(problems({ ...base, content: 'abc', pageStarts: [0, 1.5] })).not.toEqual([]);
    expect(
      problems({ ...base, content: 'abc', pageStarts: Array.from({ length: 10_001 }, () => 0) }),
    ).not.toEqual([]);
  });

  it('refuses page offsets into Markdown or HTML, whose conversion moves them', () => {
    for (const contentType of ['text/markdown', 'text/html']) {
      expect(problems({ ...base, contentType, content: 'abc', pageStarts: [0] })).toEqual([
        'pageStarts: pageStarts does not fit text/markdown or text/html',
      ]);
    }
    expect(problems({ ...base, contentType: 'text/plain', content: 'a', pageStarts: [0] })).toEqual(
      [],
    );
  });
});

describe('POST /v1/memory/documents as JSON', () => {
  it('takes text, Markdown or HTML, and no blob or pages', () => {
    const body = { title: 'Notes', contentType: 'text/markdown', content: '# Hi' };
    expect(DocumentIngestBody.safeParse(body).success).toBe(true);
    // A PDF's text is only what the tools service extracted from an uploaded file.
    expect(DocumentIngestBody.safeParse({ ...body, contentType: PDF_MEDIA_TYPE }).success).toBe(
      false,
    );
    expect(DocumentIngestBody.safeParse({ ...body, contentBlob: 'someone-else' }).success).toBe(
      false,
    );
    expect(DocumentIngestBody.safeParse({ ...body, pageStarts: [0] }).success).toBe(false);
  });
});
