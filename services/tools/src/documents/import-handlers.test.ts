import { randomUUID } from 'node:crypto';
import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import { catchBusError, connectTestBus, storedBlobNames } from '@jarvis/bus/testing';
import {
  DOCUMENT_CONTENT_MAX_CHARS,
  DOCX_MEDIA_TYPE,
  memoryDocumentsGet,
  memoryDocumentsList,
  memorySearch,
  PDF_MEDIA_TYPE,
  toolsDocumentsImport,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import { createLogger } from '@jarvis/telemetry';
import {
  makeDocx,
  makePdf,
  NATS_URL,
  REDIS_URL,
  Stack,
  startTestDatabase,
  type TestDatabase,
  uniqueNamespace,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDocumentImportHandlers } from './import-handlers';

// tools.documents.import through the real bus, the real extraction and the real memory service
// (its own process, on a test database): what the gateway's multipart upload asks.
const LIMITS = {
  maxPages: 50,
  timeoutMs: 30_000,
  memoryMb: 256,
  maxTextChars: DOCUMENT_CONTENT_MAX_CHARS,
  maxUnzippedBytes: 50 * 1024 * 1024,
};

let db: TestDatabase;
let memory: Stack;
let server: Bus;
let client: Bus;
let uploads: BlobStore;
let subscriptions: { unsubscribe(): void }[];

beforeAll(async () => {
  db = await startTestDatabase();
  const namespace = uniqueNamespace('documents-import');
  memory = new Stack({
    services: ['memory'],
    databaseUrl: db.url,
    env: { NATS_URL, REDIS_URL, NATS_NAMESPACE: namespace, LOG_LEVEL: 'warn' },
  });
  await memory.start();
  [server, client] = await Promise.all([connectTestBus(namespace), connectTestBus(namespace)]);
  uploads = await openBlobStore(client, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
  subscriptions = registerDocumentImportHandlers({
    bus: server,
    uploads: await openBlobStore(server, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS }),
    limits: LIMITS,
    ingestTimeoutMs: 60_000,
    logger: createLogger('documents-import-test', 'silent'),
  });
}, 120_000);

afterAll(async () => {
  for (const subscription of subscriptions ?? []) subscription.unsubscribe();
  const jsm = await client?.nc.jetstreamManager();
  await jsm?.streams.delete(`OBJ_${client.streamName(UPLOADS_BUCKET)}`).catch(() => undefined);
  await Promise.all([client?.close(), server?.close()]);
  await memory?.stop();
  await db?.stop();
});

// A page of 50 lines of 12 words (about 780 estimated tokens, two chunks' worth), with `marker`
// at its middle: a chunk holding the marker cannot begin on an earlier page.
function pageText(page: number, marker: string): string {
  const lines = Array.from({ length: 50 }, (_, line) =>
    Array.from({ length: 12 }, (_, word) => `p${page}w${line * 12 + word}`).join(' '),
  );
  lines[25] = `${marker} ${lines[25]}`;
  return lines.join('\n');
}

async function upload(bytes: Uint8Array): Promise<string> {
  const name = randomUUID();
  await uploads.put(name, bytes);
  return name;
}

async function documentsOf(userId: string) {
  return (await client.request(memoryDocumentsList, { userId })).documents;
}

describe('tools.documents.import', () => {
  it('imports a PDF with its title and pages; each chunk knows its page; the upload is gone', async () => {
    const userId = randomUUID();
    const pdf = await makePdf({
      title: 'Quarterly report',
      pages: [pageText(1, 'aardvark'), pageText(2, 'bandicoot'), pageText(3, 'chinchilla')],
    });
    const name = await upload(pdf);

    const { document } = await client.request(
      toolsDocumentsImport,
      { userId, upload: name, filename: 'q3.pdf', declaredType: 'application/pdf' },
      { timeoutMs: 60_000 },
    );

    expect(document).toMatchObject({
      title: 'Quarterly report',
      mediaType: PDF_MEDIA_TYPE,
      contentType: PDF_MEDIA_TYPE,
      source: 'q3.pdf',
      pages: 3,
    });
    expect(document.chunks).toBeGreaterThanOrEqual(3);
    const { chunks } = await client.request(memoryDocumentsGet, { userId, id: document.id });
    const pages = chunks.map((chunk) => chunk.page);
    expect(pages[0]).toBe(1);
    expect(pages).toEqual([...pages].sort());
    expect(new Set(pages)).toEqual(new Set([1, 2, 3]));
    const found = await client.request(memorySearch, {
      userId,
      query: 'chinchilla',
      kinds: ['document'],
    });
    expect(found.results[0]?.metadata).toMatchObject({ documentId: document.id, page: 3 });
    expect(await uploads.get(name)).toBeUndefined();
  });

  it('imports a DOCX by its content, even when the client says nothing of its type', async () => {
    const userId = randomUUID();
    const docx = await makeDocx({
      title: 'Packing list',
      paragraphs: ['Passport and tickets.', 'The blue umbrella.'],
    });

    const { document } = await client.request(toolsDocumentsImport, {
      userId,
      upload: await upload(docx),
      filename: 'packing.docx',
    });

    expect(document).toMatchObject({ title: 'Packing list', mediaType: DOCX_MEDIA_TYPE });
    expect(document.pages).toBeUndefined();
    const { chunks } = await client.request(memoryDocumentsGet, { userId, id: document.id });
    expect(chunks.map((chunk) => chunk.content).join(' ')).toContain('blue umbrella');
  });

  it("takes the title given over the document's own, and the file name when it has none", async () => {
    const userId = randomUUID();

    const given = await client.request(toolsDocumentsImport, {
      userId,
      upload: await upload(await makePdf({ title: 'Its own', pages: ['Some text.'] })),
      filename: 'a.pdf',
      title: 'Given title',
    });
    const untitled = await client.request(toolsDocumentsImport, {
      userId,
      upload: await upload(Buffer.from('Plain notes about the garden.')),
      filename: 'garden notes.txt',
    });

    expect(given.document.title).toBe('Given title');
    expect(untitled.document).toMatchObject({ title: 'garden notes.txt', mediaType: 'text/plain' });
  });

  it('hands a text too large for one NATS message to memory through the bucket, and deletes it', async () => {
    const userId = randomUUID();
    const maxPayload = client.nc.info?.max_payload ?? 1_048_576;
    const sentence = 'The lighthouse keeper logs the weather every hour. ';
    const text = sentence.repeat(Math.ceil((maxPayload * 1.5) / sentence.length));

    const { document } = await client.request(
      toolsDocumentsImport,
      { userId, upload: await upload(Buffer.from(text)), filename: 'log.txt' },
      { timeoutMs: 120_000 },
    );

    expect(document.sizeChars).toBe(text.length);
    expect(await storedBlobNames(client, UPLOADS_BUCKET)).toEqual([]);
  }, 180_000);

  it.each([
    ['a corrupt PDF', Buffer.from('%PDF-1.7\n1 0 obj <<< not a pdf'), 'broken.pdf', 'bad_request'],
    ['a PDF that says it is text', 'pdf', 'notes.txt', 'bad_request'],
    ['text that says it is a PDF', Buffer.from('just words'), 'report.pdf', 'bad_request'],
    ['a PDF of more pages than allowed', 'long-pdf', 'long.pdf', 'payload_too_large'],
  ] as const)('refuses %s, stores nothing and deletes the upload', async (_what, content, filename, code) => {
    const userId = randomUUID();
    const bytes =
      content === 'pdf'
        ? await makePdf({ pages: ['Hello.'] })
        : content === 'long-pdf'
          ? await makePdf({ pages: LIMITS.maxPages + 1, blank: true })
          : content;
    const name = await upload(bytes);

    const error = await catchBusError(
      client.request(toolsDocumentsImport, { userId, upload: name, filename }),
    );

    expect(error.code).toBe(code);
    expect(error.message.length).toBeGreaterThan(10);
    expect(await documentsOf(userId)).toEqual([]);
    expect(await uploads.get(name)).toBeUndefined();
  });

  it('answers not_found for an upload that is not there', async () => {
    const error = await catchBusError(
      client.request(toolsDocumentsImport, {
        userId: randomUUID(),
        upload: randomUUID(),
        filename: 'gone.pdf',
      }),
    );

    expect(error.code).toBe('not_found');
    expect(error.message).toContain('send the file again');
  });
});
