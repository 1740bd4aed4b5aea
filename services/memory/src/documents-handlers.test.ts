import { randomUUID } from 'node:crypto';
import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  DOCX_MEDIA_TYPE,
  type MemoryDocumentsIngestRequest,
  memoryAppend,
  memoryDocumentsDelete,
  memoryDocumentsGet,
  memoryDocumentsIngest,
  memoryDocumentsList,
  memoryRecall,
  memorySearch,
  PDF_MEDIA_TYPE,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDocumentHandlers } from './documents-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;
let countRows: MemoryFixture['countRows'];

beforeAll(async () => {
  memory = await startMemoryFixture('memory-documents', [registerDocumentHandlers]);
  ({ db, clientBus, countRows } = memory);
});

afterAll(async () => {
  // The uploads bucket the tests (and memory) opened in this namespace.
  const jsm = await clientBus?.nc.jetstreamManager();
  await jsm?.streams.delete(`OBJ_${clientBus.streamName(UPLOADS_BUCKET)}`).catch(() => undefined);
  await memory?.stop();
});

function ingest(userId: string, fields: Partial<Omit<MemoryDocumentsIngestRequest, 'userId'>>) {
  return clientBus.request(
    memoryDocumentsIngest,
    { userId, title: 'A document', contentType: 'text/plain', ...fields },
    { timeoutMs: 30_000 },
  );
}

function get(userId: string, id: string, fromIndex?: number) {
  return clientBus.request(memoryDocumentsGet, {
    userId,
    id,
    ...(fromIndex === undefined ? {} : { fromIndex }),
  });
}

function words(text: string): string[] {
  return text.split(/\s+/).filter(Boolean);
}

function countChunkRows(documentId: string): Promise<number> {
  return countRows('SELECT count(*) FROM memory.document_chunks WHERE document_id = $1', [
    documentId,
  ]);
}

function countEmbeddingRows(documentId: string): Promise<number> {
  return countRows(
    `SELECT count(*) FROM memory.embeddings e
     WHERE e.item_kind = 'document' AND e.item_id IN (
       SELECT id FROM memory.document_chunks WHERE document_id = $1)`,
    [documentId],
  );
}

const NOT_FOUND = { code: 'not_found', message: 'document not found' };

// A guide in five sections of about 300 words each: every section fills most of a chunk, so a
// question about one of them has one right answer.
const SECTIONS: [string, string[]][] = [
  [
    'Growing tomatoes',
    [
      'Tomato seedlings want full sun and a deep pot of loose compost.',
      'Pinch out the side shoots so the plant puts its energy into fruit.',
      'Water the roots in the morning and never the leaves, which invites blight.',
    ],
  ],
  [
    'Baking sourdough',
    [
      'Feed the starter with equal weights of rye flour and water the night before.',
      'Fold the dough every half hour during bulk fermentation to build gluten.',
      'Bake in a preheated cast iron pot with the lid on for the first twenty minutes.',
    ],
  ],
  [
    'Marathon training',
    [
      'Build weekly mileage slowly and keep most runs at an easy conversational pace.',
      'The taper begins three weeks before the race, cutting volume by a third each week.',
      'On race morning eat a familiar breakfast and start slower than your goal pace.',
    ],
  ],
  [
    'Choosing a telescope',
    [
      'Aperture matters more than magnification when you look at faint galaxies.',
      'A dobsonian mount is simple, stable and cheap for a first instrument.',
      'Let the mirror cool outside for an hour before observing planets.',
    ],
  ],
  [
    'Filing taxes',
    [
      'Keep receipts for deductible expenses in one folder through the year.',
      'Freelancers pay estimated tax every quarter to avoid penalties.',
      'Check the filing deadline and request an extension before it passes.',
    ],
  ],
];

function guideMarkdown(): string {
  return SECTIONS.map(([title, sentences]) => {
    const paragraphs = Array.from({ length: 9 }, () => sentences.join(' '));
    return `## ${title}\n\n${paragraphs.join('\n\n')}`;
  }).join('\n\n');
}

describe('memory.documents.ingest and memory.documents.get', () => {
  it('stores plain text as one chunk and reads it back', async () => {
    const userId = randomUUID();

    const { document } = await ingest(userId, {
      title: 'Shopping list',
      content: 'Eggs, milk   and bread.\n\n\nAlso coffee.',
      source: 'notes.txt',
      metadata: { folder: 'home' },
    });
    const read = await get(userId, document.id);

    expect(document).toEqual({
      id: expect.any(String),
      title: 'Shopping list',
      contentType: 'text/plain',
      source: 'notes.txt',
      metadata: { folder: 'home' },
      sizeChars: 'Eggs, milk   and bread.\n\n\nAlso coffee.'.length,
      chunkCount: 1,
      mediaType: 'text/plain',
      chunks: 1,
      createdAt: expect.any(String),
    });
    expect(read).toEqual({
      document,
      chunks: [{ index: 0, content: 'Eggs, milk and bread.\n\nAlso coffee.', tokenCount: 8 }],
      isTruncated: false,
    });
  });

  it('keeps the text of Markdown: headings and link text, without images', async () => {
    const userId = randomUUID();
    const content =
      '# Trip plan\nFly to [Lisbon](https://example.com/lisbon) on Friday.\n![map](m.png)';

    const { document } = await ingest(userId, { contentType: 'text/markdown', content });
    const { chunks } = await get(userId, document.id);

    expect(document).toMatchObject({ contentType: 'text/markdown', source: null, metadata: {} });
    expect(chunks.map((chunk) => chunk.content)).toEqual(['Trip plan\n\nFly to Lisbon on Friday.']);
  });

  it('keeps the text of HTML, without scripts, styles or the head, entities decoded', async () => {
    const userId = randomUUID();
    const content = `<html><head><title>Ignored</title><style>h1{}</style></head><body>
      <h1>Q3 report</h1><script>alert("x")</script>
      <p>Revenue grew 12&nbsp;% &amp; costs fell.</p><ul><li>North</li><li>South</li></ul>
      </body></html>`;

    const { document } = await ingest(userId, { contentType: 'text/html', content });
    const { chunks } = await get(userId, document.id);

    expect(chunks.map((chunk) => chunk.content)).toEqual([
      'Q3 report\n\nRevenue grew 12 % & costs fell.\n\nNorth\nSouth',
    ]);
    expect(document.sizeChars).toBeLessThan(content.length);
  });

  it('splits a long document into overlapping chunks within the token target, in order', async () => {
    const userId = randomUUID();

    const { document } = await ingest(userId, {
      contentType: 'text/markdown',
      content: guideMarkdown(),
    });
    const { chunks, isTruncated } = await get(userId, document.id);

    expect(isTruncated).toBe(false);
    expect(document.chunkCount).toBeGreaterThanOrEqual(5);
    expect(chunks.map((chunk) => chunk.index)).toEqual(
      Array.from({ length: document.chunkCount }, (_, index) => index),
    );
    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(400);
      expect(chunk.tokenCount).toBe(Math.ceil((words(chunk.content).length * 13) / 10));
    }
    for (let index = 1; index < chunks.length; index++) {
      const previous = words(chunks[index - 1]?.content ?? '');
      const current = words(chunks[index]?.content ?? '');
      expect(current.slice(0, 46)).toEqual(previous.slice(-46));
    }
    expect(await countChunkRows(document.id)).toBe(document.chunkCount);
    expect(await countEmbeddingRows(document.id)).toBe(document.chunkCount);
    const { rows } = await db.pool.query<{ items: string }>(
      'SELECT items FROM memory.item_counts WHERE user_id = $1',
      [userId],
    );
    expect(Number(rows[0]?.items)).toBe(document.chunkCount);
  });

  it('answers a document too long for one reply in parts, from a chunk index', async () => {
    const userId = randomUUID();
    const paragraph = 'The quick brown fox jumps over the lazy dog near the riverbank. '.repeat(8);
    const content = Array.from({ length: 1_500 }, () => paragraph).join('\n\n');

    const { document } = await ingest(userId, { content });
    const first = await get(userId, document.id);
    const last = first.chunks.at(-1)?.index ?? 0;
    const rest = await get(userId, document.id, last + 1);

    expect(first.isTruncated).toBe(true);
    expect(rest.isTruncated).toBe(false);
    expect([...first.chunks, ...rest.chunks].map((chunk) => chunk.index)).toEqual(
      Array.from({ length: document.chunkCount }, (_, index) => index),
    );
  });
});

describe('memory.documents.list', () => {
  it("lists the user's documents newest first, up to the limit, without metadata", async () => {
    const userId = randomUUID();
    for (const title of ['first', 'second', 'third']) {
      await ingest(userId, { title, content: `The ${title} document.`, metadata: { title } });
    }
    await ingest(randomUUID(), { title: 'someone else', content: 'Not yours.' });

    const all = await clientBus.request(memoryDocumentsList, { userId });
    const limited = await clientBus.request(memoryDocumentsList, { userId, limit: 2 });

    expect(all.documents.map((document) => document.title)).toEqual(['third', 'second', 'first']);
    expect(all.documents[0]).toEqual({
      id: expect.any(String),
      title: 'third',
      contentType: 'text/plain',
      source: null,
      sizeChars: 'The third document.'.length,
      chunkCount: 1,
      createdAt: expect.any(String),
    });
    expect(limited.documents.map((document) => document.title)).toEqual(['third', 'second']);
  });
});

describe('memory.documents.delete', () => {
  it('removes the document, its chunks and their embeddings', async () => {
    const userId = randomUUID();
    const { document } = await ingest(userId, {
      contentType: 'text/markdown',
      content: guideMarkdown(),
    });
    expect(await countEmbeddingRows(document.id)).toBe(document.chunkCount);
    const chunkIds = (
      await db.pool.query<{ id: string }>(
        'SELECT id FROM memory.document_chunks WHERE document_id = $1',
        [document.id],
      )
    ).rows.map((row) => row.id);

    const deleted = await clientBus.request(memoryDocumentsDelete, { userId, id: document.id });

    expect(deleted).toEqual({ id: document.id });
    expect(
      await countRows('SELECT count(*) FROM memory.documents WHERE id = $1', [document.id]),
    ).toBe(0);
    expect(await countChunkRows(document.id)).toBe(0);
    expect(
      await countRows('SELECT count(*) FROM memory.embeddings WHERE item_id = ANY($1::uuid[])', [
        chunkIds,
      ]),
    ).toBe(0);
    await expect(get(userId, document.id)).rejects.toMatchObject(NOT_FOUND);
    await expect(
      clientBus.request(memoryDocumentsDelete, { userId, id: document.id }),
    ).rejects.toMatchObject(NOT_FOUND);
    expect((await clientBus.request(memoryDocumentsList, { userId })).documents).toEqual([]);
  });
});

describe('memory search over documents', () => {
  it('finds the chunk that answers a question about the middle of a document', async () => {
    const userId = randomUUID();
    const { document } = await ingest(userId, {
      title: 'Hobby handbook',
      contentType: 'text/markdown',
      content: guideMarkdown(),
      source: 'handbook.md',
    });
    // A message on the same subject: a search for documents only must not return it.
    await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'My coach says the taper begins three weeks before the race.',
    });
    const { chunks } = await get(userId, document.id);

    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: 'how many weeks before the race does the taper begin?',
      kinds: ['document'],
    });

    const [best] = results;
    expect(best).toMatchObject({
      kind: 'document',
      conversationId: null,
      metadata: { documentId: document.id, title: 'Hobby handbook', source: 'handbook.md' },
    });
    const chunkIndex = Number(best?.metadata.chunkIndex);
    expect(chunkIndex).toBeGreaterThan(0);
    expect(chunkIndex).toBeLessThan(document.chunkCount - 1);
    expect(best?.text).toBe(chunks[chunkIndex]?.content);
    expect(best?.text).toContain('The taper begins three weeks before the race');
    expect(results.every((result) => result.kind === 'document')).toBe(true);

    await clientBus.request(memoryDocumentsDelete, { userId, id: document.id });
    const after = await clientBus.request(memorySearch, {
      userId,
      query: 'how many weeks before the race does the taper begin?',
      kinds: ['document'],
    });
    expect(after.results).toEqual([]);
  });

  it('finds nothing within a conversation, where documents never are', async () => {
    const userId = randomUUID();
    await ingest(userId, { content: 'The taper begins three weeks before the race.' });

    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: 'taper race',
      kinds: ['document'],
      conversationId: randomUUID(),
    });

    expect(results).toEqual([]);
  });
});

describe("another user's documents", () => {
  const owner = randomUUID();
  const intruder = randomUUID();
  let documentId: string;

  beforeAll(async () => {
    const { document } = await ingest(owner, {
      title: 'Launch plan',
      content: 'The launch codes are kept in the blue safe.',
    });
    documentId = document.id;
    await ingest(intruder, { title: 'Mine', content: 'My own notes.' });
  });

  it('answer get and delete exactly like a missing document, and stay untouched', async () => {
    await expect(get(intruder, documentId)).rejects.toMatchObject(NOT_FOUND);
    await expect(
      clientBus.request(memoryDocumentsDelete, { userId: intruder, id: documentId }),
    ).rejects.toMatchObject(NOT_FOUND);
    await expect(get(intruder, randomUUID())).rejects.toMatchObject(NOT_FOUND);

    expect((await get(owner, documentId)).chunks).toHaveLength(1);
    expect(await countEmbeddingRows(documentId)).toBe(1);
  });

  it('never show up in listings or search', async () => {
    const listed = await clientBus.request(memoryDocumentsList, { userId: intruder });
    const found = await clientBus.request(memorySearch, {
      userId: intruder,
      query: 'launch codes blue safe',
      kinds: ['document'],
    });

    expect(listed.documents.map((document) => document.title)).toEqual(['Mine']);
    expect(found.results.map((result) => result.metadata.documentId)).not.toContain(documentId);
    expect(found.results.map((result) => result.text)).not.toContain(
      'The launch codes are kept in the blue safe.',
    );
  });
});

describe('request validation', () => {
  const userId = randomUUID();
  const valid = { userId, title: 'T', contentType: 'text/plain', content: 'Some text.' };

  it.each([
    ['an empty title', { title: '' }, /^title: /],
    ['a blank title', { title: '   ' }, /^title: /],
    ['a title over 300 characters', { title: 'x'.repeat(301) }, /^title: /],
    ['a title with a newline', { title: 'a\nb' }, /^title: /],
    ['an unknown contentType', { contentType: 'application/msword' }, /^contentType: /],
    ['empty content', { content: '' }, /^content: /],
    ['an empty source', { source: '' }, /^source: /],
    ['metadata with a NUL', { metadata: { a: 'x\u0000y' } }, /^metadata: /],
    ['a userId that is not a uuid', { userId: 'nope' }, /^userId: /],
  ])('answers bad_request to %s', async (_label, override, message) => {
    const reply = await sendRaw(clientBus, 'memory.documents.ingest', { ...valid, ...override });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(message) },
    });
  });

  it.each([
    ['HTML with only a script', 'text/html', '<html><script>var x = 1;</script></html>'],
    ['Markdown with only an image', 'text/markdown', '![diagram](d.png)'],
    ['plain text of blanks', 'text/plain', ' \n\n\t '],
  ])('answers bad_request to %s and stores nothing', async (_label, contentType, content) => {
    const reply = await sendRaw(clientBus, 'memory.documents.ingest', {
      ...valid,
      contentType,
      content,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: 'document has no text' },
    });
    expect(
      await countRows('SELECT count(*) FROM memory.documents WHERE user_id = $1', [userId]),
    ).toBe(0);
  });

  it.each([
    ['memory.documents.list', { limit: 201 }, /^limit: /],
    ['memory.documents.get', { id: 'nope' }, /^id: /],
    ['memory.documents.get', { id: randomUUID(), fromIndex: -1 }, /^fromIndex: /],
    ['memory.documents.delete', {}, /^id: /],
  ])('answers bad_request to a bad %s', async (subject, extra, message) => {
    const reply = await sendRaw(clientBus, subject, { userId, ...extra });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(message) },
    });
  });
});

describe('term statistics', () => {
  it('counts a document while it exists and uncounts it when deleted', async () => {
    const userId = randomUUID();
    const stats = async () => {
      const { rows } = await db.pool.query<{ term: string; items: number }>(
        `SELECT term, items FROM memory.term_stats WHERE user_id = $1 AND term = 'zanzibar'`,
        [userId],
      );
      const total = await db.pool.query<{ items: string }>(
        'SELECT items FROM memory.item_counts WHERE user_id = $1',
        [userId],
      );
      return { zanzibar: rows[0]?.items ?? 0, items: Number(total.rows[0]?.items ?? 0) };
    };
    const { document } = await ingest(userId, {
      content: 'Zanzibar trip notes: spices and beaches.',
    });
    expect(await stats()).toEqual({ zanzibar: 1, items: 1 });

    await clientBus.request(memoryDocumentsDelete, { userId, id: document.id });
    expect(await stats()).toEqual({ zanzibar: 0, items: 0 });
  });
});

// The hobby guide as a PDF's extracted text would come: a title page, each section on a page of
// its own, a blank page before the last, and the offsets where the pages begin.
function guidePdf(): { content: string; pageStarts: number[] } {
  const pages = [
    'Hobby handbook\nSecond edition',
    ...SECTIONS.slice(0, -1).map(([title, sentences]) =>
      [title, ...Array.from({ length: 9 }, () => sentences.join(' '))].join('\n'),
    ),
    '',
    ...SECTIONS.slice(-1).map(([title, sentences]) =>
      [title, ...Array.from({ length: 9 }, () => sentences.join(' '))].join('\n'),
    ),
  ];
  const pageStarts: number[] = [];
  let content = '';
  for (const page of pages) {
    if (content) content += '\n';
    pageStarts.push(content.length);
    content += page;
  }
  return { content, pageStarts };
}

// The page a text is on, by the section title it is under.
function pageOfSection(title: string): number {
  const index = SECTIONS.findIndex(([section]) => section === title);
  // Page 1 is the title page; the last section comes after a blank page.
  return index + 2 + (index === SECTIONS.length - 1 ? 1 : 0);
}

describe('documents with pages', () => {
  it('keeps the page each chunk begins on, and search names the title and page', async () => {
    const userId = randomUUID();
    const { content, pageStarts } = guidePdf();

    const { document } = await ingest(userId, {
      title: 'Hobby handbook',
      contentType: PDF_MEDIA_TYPE,
      content,
      pageStarts,
      source: 'handbook.pdf',
    });
    const { chunks } = await get(userId, document.id);

    expect(document).toMatchObject({
      contentType: PDF_MEDIA_TYPE,
      mediaType: PDF_MEDIA_TYPE,
      pages: 7,
      chunks: chunks.length,
      chunkCount: chunks.length,
      sizeChars: content.length,
    });
    expect(chunks.length).toBeGreaterThan(5);
    // A chunk's page is the page of its first sentence: the section that sentence belongs to.
    for (const chunk of chunks) {
      const first = chunk.content.split('\n')[0] ?? '';
      const section = SECTIONS.find(
        ([title, sentences]) => first === title || sentences.some((line) => first.includes(line)),
      );
      const expected = first.startsWith('Hobby handbook') ? 1 : pageOfSection(section?.[0] ?? '');
      expect(chunk.page, chunk.content.slice(0, 80)).toBe(expected);
    }
    expect(new Set(chunks.map((chunk) => chunk.page))).toEqual(new Set([1, 2, 3, 4, 5, 7]));
    const listed = await clientBus.request(memoryDocumentsList, { userId });
    expect(listed.documents[0]).toMatchObject({ id: document.id, pages: 7 });

    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: 'how many weeks before the race does the taper begin?',
      kinds: ['document'],
    });

    expect(results[0]).toMatchObject({
      kind: 'document',
      metadata: {
        documentId: document.id,
        title: 'Hobby handbook',
        source: 'handbook.pdf',
        page: pageOfSection('Marathon training'),
      },
    });
    expect(results[0]?.text).toContain('The taper begins three weeks before the race');
  });

  it('recalls a chunk for a turn with its title and page, whose tokens it counts', async () => {
    const userId = randomUUID();
    const { content, pageStarts } = guidePdf();
    await ingest(userId, {
      title: 'Hobby handbook',
      contentType: PDF_MEDIA_TYPE,
      content,
      pageStarts,
    });
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'How many weeks before the race does the taper begin?',
    });

    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId: message.conversationId,
      messageId: message.id,
      query: message.content,
    });

    const chunk = recall.relevant.find((item) => item.kind === 'document');
    expect(chunk).toMatchObject({
      title: 'Hobby handbook',
      page: pageOfSection('Marathon training'),
    });
    expect(chunk?.text).toContain('The taper begins three weeks before the race');
    // Estimated tokens (words × 1.3): the title and page are words of the prompt too.
    expect(chunk?.tokens).toBeGreaterThan(Math.ceil(words(chunk?.text ?? '').length * 1.3));
  });

  it('gives a DOCX, which has no pages, neither a page count nor pages on its chunks', async () => {
    const userId = randomUUID();

    const { document } = await ingest(userId, {
      title: 'Telescope notes',
      contentType: DOCX_MEDIA_TYPE,
      content: 'Aperture matters more than magnification when you look at faint galaxies.',
    });
    const { chunks } = await get(userId, document.id);
    const { results } = await clientBus.request(memorySearch, {
      userId,
      query: 'aperture galaxies',
      kinds: ['document'],
    });

    expect(document).toMatchObject({ mediaType: DOCX_MEDIA_TYPE, chunks: 1 });
    expect(document).not.toHaveProperty('pages');
    expect(chunks[0]).not.toHaveProperty('page');
    expect(results[0]?.metadata).toEqual({
      documentId: document.id,
      title: 'Telescope notes',
      chunkIndex: 0,
      source: null,
    });
  });

  it.each([
    ['Markdown', { contentType: 'text/markdown', pageStarts: [0] }],
    ['HTML', { contentType: 'text/html', pageStarts: [0] }],
    ['offsets that decrease', { contentType: PDF_MEDIA_TYPE, pageStarts: [0, 5, 2] }],
    ['an offset past the end', { contentType: PDF_MEDIA_TYPE, pageStarts: [0, 11] }],
  ])('answers bad_request to page offsets into %s, and stores nothing', async (_label, fields) => {
    const userId = randomUUID();

    const reply = await sendRaw(clientBus, 'memory.documents.ingest', {
      userId,
      title: 'T',
      content: 'Some text.',
      ...fields,
    });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^pageStarts: /) },
    });
    expect(
      await countRows('SELECT count(*) FROM memory.documents WHERE user_id = $1', [userId]),
    ).toBe(0);
  });
});

describe('a text that comes through the uploads bucket', () => {
  let uploads: BlobStore;

  beforeAll(async () => {
    uploads = await openBlobStore(clientBus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
  });

  function countDocuments(userId: string): Promise<number> {
    return countRows('SELECT count(*) FROM memory.documents WHERE user_id = $1', [userId]);
  }

  it('ingests a text bigger than one NATS message, pages and all, and leaves the blob to its sender', async () => {
    const userId = randomUUID();
    // Every word names its page ("p3harbour…"), so a chunk's first word tells where it begins.
    // Long words and few distinct ones: a megabyte in few chunks, which are what indexing costs.
    const line = (number: number) =>
      ['harbour', 'master', 'ledger', 'tide', 'cargo', 'berth'].map(
        (word) => `p${number}${word}${'o'.repeat(80)}`,
      );
    const page = (number: number) =>
      Array.from({ length: 200 }, () => `${line(number).join(' ')}.`).join('\n');
    const pages = Array.from({ length: 12 }, (_, index) => page(index + 1));
    const pageStarts = pages.map((_, index) =>
      pages.slice(0, index).reduce((length, text) => length + text.length + 1, 0),
    );
    const content = `${pages.join('\n')}\n`;
    const name = `text-${randomUUID()}`;
    const bytes = new TextEncoder().encode(content);
    expect(bytes.byteLength).toBeGreaterThan(clientBus.nc.info?.max_payload ?? 1_048_576);
    await uploads.put(name, bytes);

    const { document } = await ingest(userId, {
      title: 'Harbour ledger',
      contentType: PDF_MEDIA_TYPE,
      contentBlob: name,
      pageStarts,
    });

    expect(document).toMatchObject({ pages: 12, sizeChars: content.length });
    let fromIndex = 0;
    for (;;) {
      const part = await get(userId, document.id, fromIndex);
      for (const chunk of part.chunks) {
        const first = /^p(\d+)/.exec(chunk.content);
        expect(chunk.page).toBe(Number(first?.[1]));
      }
      fromIndex += part.chunks.length;
      if (!part.isTruncated) break;
    }
    expect(fromIndex).toBe(document.chunkCount);
    // Deleting it is the sender's: it knows when it no longer needs it.
    expect(await uploads.get(name)).toEqual(bytes);
    await uploads.delete(name);
    // A megabyte is chunked, embedded and indexed in one transaction: seconds on a busy machine.
  }, 60_000);

  it('answers bad_request to a blob that is not there, and stores nothing', async () => {
    const userId = randomUUID();

    const error = await catchBusError(ingest(userId, { contentBlob: `gone-${randomUUID()}` }));

    expect(error.code).toBe('bad_request');
    expect(error.message).toBe("the document's text is no longer in the uploads bucket");
    expect(await countDocuments(userId)).toBe(0);
  });

  it.each([
    ['text that is not UTF-8', Uint8Array.from([0x61, 0xff, 0x62]), {}, 'bad_request'],
    ['no text at all', new Uint8Array(0), {}, 'bad_request'],
    [
      'offsets past the end of its text',
      new TextEncoder().encode('abc'),
      { pageStarts: [0, 4] },
      'bad_request',
    ],
    [
      'text over the length limit',
      new TextEncoder().encode('word '.repeat(400_001)),
      {},
      'payload_too_large',
    ],
  ])('refuses a blob of %s, and stores nothing', async (_label, bytes, fields, code) => {
    const userId = randomUUID();
    const name = `text-${randomUUID()}`;
    await uploads.put(name, bytes);

    const error = await catchBusError(
      ingest(userId, {
        contentType: PDF_MEDIA_TYPE,
        contentBlob: name,
        ...fields,
      }),
    );

    expect(error.code).toBe(code);
    expect(await countDocuments(userId)).toBe(0);
    await uploads.delete(name);
  });

  it('answers bad_request to both content and a blob, or neither', async () => {
    for (const fields of [{ contentBlob: 'x' }, {}]) {
      const reply = await sendRaw(clientBus, 'memory.documents.ingest', {
        userId: randomUUID(),
        title: 'T',
        contentType: 'text/plain',
        ...(Object.keys(fields).length > 0 ? { content: 'text' } : {}),
        ...fields,
      });
      expect(reply).toEqual({
        ok: false,
        error: {
          code: 'bad_request',
          message: 'content: exactly one of content and contentBlob is required',
        },
      });
    }
  });
});
