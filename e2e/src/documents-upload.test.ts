import {
  DOCX_MEDIA_TYPE,
  ErrorBody,
  MemoryDocumentsIngestResponse,
  MemoryDocumentsListResponse,
  MemorySearchResponse,
  PDF_MEDIA_TYPE,
} from '@jarvis/contracts';
import {
  encryptedPdf,
  makeDocx,
  makeDocxZipBomb,
  makePdf,
  type StackFixture,
  startStackFixture,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

// Uploading PDF and DOCX files through the whole stack, as a user's client does: the gateway
// streams the file to the uploads bucket, the tools service extracts its text in its worker,
// memory chunks and indexes it with its pages, and search finds it by page. Every bad file is a
// 4xx that leaves the user's documents as they were.
const UPLOAD_MAX_BYTES = 25 * 1024 * 1024;

let fixture: StackFixture;
let key: string;

beforeAll(async () => {
  fixture = await startStackFixture();
  key = (await fixture.createUser('uploader')).apiKey;
});

afterAll(async () => {
  await fixture?.close();
});

type Reply = { status: number; body: unknown };

async function upload(
  file: Uint8Array,
  filename: string,
  options: { type?: string; title?: string } = {},
): Promise<Reply> {
  const form = new FormData();
  if (options.title !== undefined) form.append('title', options.title);
  form.append('file', new Blob([file], { type: options.type ?? '' }), filename);
  const response = await fetch(`${fixture.stack.gatewayUrl}/v1/memory/documents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

async function documentIds(): Promise<string[]> {
  const listed = MemoryDocumentsListResponse.parse(
    (await call('GET', '/v1/memory/documents')).body,
  );
  return listed.documents.map((document) => document.id);
}

async function searchDocuments(query: string) {
  const reply = await call('POST', '/v1/memory/search', { query, kinds: ['document'] });
  expect(reply.status).toBe(200);
  return MemorySearchResponse.parse(reply.body).results;
}

// Enough words that each page makes chunks of its own, with the marker in the page's middle:
// the chunk that holds it begins on that page.
function pageText(page: number, marker: string): string {
  const lines = Array.from({ length: 50 }, (_, line) =>
    Array.from({ length: 12 }, (_, word) => `p${page}w${line * 12 + word}`).join(' '),
  );
  lines[25] = `${marker} ${lines[25]}`;
  return lines.join('\n');
}

describe('uploading documents', () => {
  it('stores a PDF with its pages, and search names the page a hit is on', async () => {
    const pdf = await makePdf({
      title: 'Boiler manual',
      pages: [pageText(1, 'thermostat'), pageText(2, 'pressure'), pageText(3, 'descaling')],
    });

    const reply = await upload(pdf, 'boiler.pdf', { type: 'application/pdf' });

    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const { document } = MemoryDocumentsIngestResponse.parse(reply.body);
    expect(document).toMatchObject({
      id: expect.any(String),
      title: 'Boiler manual',
      mediaType: PDF_MEDIA_TYPE,
      pages: 3,
    });
    expect(document.chunks).toBeGreaterThanOrEqual(3);
    const hits = await searchDocuments('descaling');
    expect(hits[0]).toMatchObject({ kind: 'document' });
    expect(hits[0]?.metadata).toMatchObject({ documentId: document.id, page: 3 });
    const first = await searchDocuments('thermostat');
    expect(first[0]?.metadata).toMatchObject({ documentId: document.id, page: 1 });
  });

  it('stores a DOCX under the title given, and search finds it', async () => {
    const docx = await makeDocx({
      title: 'Its own title',
      paragraphs: ['The spare key is under the geranium pot.', 'Water the ferns on Sundays.'],
    });

    const reply = await upload(docx, 'house.docx', { type: DOCX_MEDIA_TYPE, title: 'House notes' });

    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const { document } = MemoryDocumentsIngestResponse.parse(reply.body);
    expect(document).toMatchObject({ title: 'House notes', mediaType: DOCX_MEDIA_TYPE });
    expect(document.pages).toBeUndefined();
    const hits = await searchDocuments('geranium');
    expect(hits[0]?.metadata).toMatchObject({ documentId: document.id });
    expect(hits[0]?.text).toContain('geranium');
  });

  it('shows both bodies of POST /v1/memory/documents in the OpenAPI document', async () => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/v1/openapi.json`);
    const document = z
      .object({
        paths: z.record(
          z.string(),
          z.record(
            z.string(),
            z
              .object({ requestBody: z.object({ content: z.record(z.string(), z.unknown()) }) })
              .partial(),
          ),
        ),
      })
      .parse(await response.json());

    const content = document.paths['/v1/memory/documents']?.post?.requestBody?.content ?? {};
    expect(Object.keys(content).sort()).toEqual(['application/json', 'multipart/form-data']);
  });
});

describe('refusing bad files, with nothing stored', () => {
  it.each<[string, number, () => Promise<[Uint8Array, string, string?]>]>([
    ['an encrypted PDF', 400, async () => [await encryptedPdf(), 'secret.pdf', 'application/pdf']],
    [
      'a corrupt PDF',
      400,
      async () => {
        const pdf = await makePdf({ pages: ['A page that will be cut.'] });
        return [pdf.slice(0, Math.floor(pdf.length / 2)), 'cut.pdf', 'application/pdf'];
      },
    ],
    ['a DOCX zip bomb', 413, async () => [makeDocxZipBomb(), 'bomb.docx', DOCX_MEDIA_TYPE]],
    [
      'a 10,000-page PDF',
      413,
      async () => [await makePdf({ pages: 10_000, blank: true }), 'long.pdf', 'application/pdf'],
    ],
    [
      'a PDF that says it is a DOCX',
      400,
      async () => [await makePdf({ pages: ['Hello.'] }), 'letter.docx', DOCX_MEDIA_TYPE],
    ],
    [
      'text that says it is a PDF',
      400,
      async () => [Buffer.from('Just some words.'), 'notes.pdf', 'application/pdf'],
    ],
    [
      'a file one byte over 25 MiB',
      413,
      async () => [Buffer.alloc(UPLOAD_MAX_BYTES + 1, 'a'), 'huge.txt', 'text/plain'],
    ],
  ])('answers %s with a clear %i', async (_what, status, make) => {
    const before = await documentIds();
    const [file, filename, type] = await make();

    const reply = await upload(file, filename, type === undefined ? {} : { type });

    expect(reply.status, JSON.stringify(reply.body)).toBe(status);
    const { message } = ErrorBody.parse(reply.body).error;
    expect(message.length).toBeGreaterThan(10);
    expect(await documentIds()).toEqual(before);
  });
});
