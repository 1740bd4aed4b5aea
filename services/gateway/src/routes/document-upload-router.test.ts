import { connect } from 'node:net';
import { storedBlobNames } from '@jarvis/bus/testing';
import {
  DOCX_MEDIA_TYPE,
  ErrorBody,
  MemoryDocumentsIngestResponse,
  MemoryDocumentsListResponse,
  PDF_MEDIA_TYPE,
  UPLOADS_BUCKET,
} from '@jarvis/contracts';
import { makeDocx, makePdf, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture, type TestUser } from './router-fixture';

// POST /v1/memory/documents as multipart/form-data, through the real tools service (which
// extracts) and memory (which stores), each its own process. The upload limit is small here so
// that "one byte over" costs little.
const UPLOAD_MAX_BYTES = 256 * 1024;

let harness: RouterFixture;
let alice: TestUser;

beforeAll(async () => {
  harness = await startRouterFixture('/v1/memory/documents', {
    services: ['memory', 'tools'],
    documentUploadMaxBytes: UPLOAD_MAX_BYTES,
  });
  ({ alice } = harness);
}, 120_000);

afterAll(async () => {
  await harness?.stop();
});

type Part =
  | { name: string; value: string }
  | { name: string; file: Uint8Array; filename: string; type?: string };

function formOf(parts: Part[]): FormData {
  const form = new FormData();
  for (const part of parts) {
    if ('value' in part) form.append(part.name, part.value);
    else form.append(part.name, new Blob([part.file], { type: part.type ?? '' }), part.filename);
  }
  return form;
}

async function post(body: FormData | string, contentType?: string) {
  const response = await fetch(harness.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${alice.key}`,
      ...(contentType ? { 'content-type': contentType } : {}),
    },
    body,
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function listedIds(): Promise<string[]> {
  const reply = await harness.call('GET', '/', { key: alice.key });
  return MemoryDocumentsListResponse.parse(reply.body).documents.map((document) => document.id);
}

describe('uploading a file', () => {
  it('stores a PDF with its pages and the title given, and answers 201 with the document', async () => {
    const pdf = await makePdf({ title: 'Own title', pages: ['First page.', 'Second page.'] });

    const reply = await post(
      formOf([
        { name: 'title', value: 'Lease agreement' },
        { name: 'file', file: pdf, filename: 'lease.pdf', type: 'application/pdf' },
      ]),
    );

    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const { document } = MemoryDocumentsIngestResponse.parse(reply.body);
    expect(document).toMatchObject({
      title: 'Lease agreement',
      mediaType: PDF_MEDIA_TYPE,
      pages: 2,
      source: 'lease.pdf',
    });
    expect(document.chunks).toBeGreaterThanOrEqual(1);
    expect(await listedIds()).toContain(document.id);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });

  it("stores a DOCX under its own title, sent with the browser's generic type", async () => {
    const docx = await makeDocx({ title: 'Recipes', paragraphs: ['Soak the beans overnight.'] });

    const reply = await post(
      formOf([
        { name: 'file', file: docx, filename: 'Récettes.docx', type: 'application/octet-stream' },
      ]),
    );

    expect(reply.status).toBe(201);
    expect(MemoryDocumentsIngestResponse.parse(reply.body).document).toMatchObject({
      title: 'Recipes',
      mediaType: DOCX_MEDIA_TYPE,
      source: 'Récettes.docx',
    });
  });

  it('takes a file of exactly the limit', async () => {
    const text = 'a'.repeat(UPLOAD_MAX_BYTES - 1).concat('\n');

    const reply = await post(
      formOf([{ name: 'file', file: Buffer.from(text), filename: 'big.txt', type: 'text/plain' }]),
    );

    expect(reply.status).toBe(201);
    expect(MemoryDocumentsIngestResponse.parse(reply.body).document.sizeChars).toBe(
      UPLOAD_MAX_BYTES,
    );
  });

  it('still takes JSON, as before', async () => {
    const reply = await harness.call('POST', '/', {
      key: alice.key,
      body: { title: 'Note', contentType: 'text/plain', content: 'Bins go out on Tuesday.' },
    });

    expect(reply.status).toBe(201);
  });
});

describe('refusing an upload, with nothing stored and nothing left in the bucket', () => {
  const pdfBytes = () => makePdf({ pages: ['Hello.'] });

  it.each<
    [string, () => Promise<{ body: FormData | string; contentType?: string }>, number, RegExp]
  >([
    [
      'a form without the file',
      async () => ({ body: formOf([{ name: 'title', value: 'Nothing' }]) }),
      400,
      /expected a file in the form field `file`/,
    ],
    [
      'a field the form does not take',
      async () => ({
        body: formOf([
          { name: 'file', file: await pdfBytes(), filename: 'a.pdf' },
          { name: 'author', value: 'me' },
        ]),
      }),
      400,
      /not `author`/,
    ],
    [
      'a file under another name',
      async () => ({
        body: formOf([{ name: 'upload', file: await pdfBytes(), filename: 'a.pdf' }]),
      }),
      400,
      /not `upload`/,
    ],
    [
      'two files',
      async () => ({
        body: formOf([
          { name: 'file', file: await pdfBytes(), filename: 'a.pdf' },
          { name: 'file', file: await pdfBytes(), filename: 'b.pdf' },
        ]),
      }),
      400,
      /one file/,
    ],
    [
      'two titles',
      async () => ({
        body: formOf([
          { name: 'title', value: 'One' },
          { name: 'file', file: await pdfBytes(), filename: 'a.pdf' },
          { name: 'title', value: 'Two' },
        ]),
      }),
      400,
      /one `title`/,
    ],
    [
      'the file as a text field',
      async () => ({ body: formOf([{ name: 'file', value: 'not a file' }]) }),
      400,
      /must be a file part/,
    ],
    [
      'an empty file',
      async () => ({ body: formOf([{ name: 'file', file: new Uint8Array(), filename: 'a.txt' }]) }),
      400,
      /empty/,
    ],
    [
      'a title too long',
      async () => ({
        body: formOf([
          { name: 'title', value: 'x'.repeat(301) },
          { name: 'file', file: await pdfBytes(), filename: 'a.pdf' },
        ]),
      }),
      400,
      /title/,
    ],
    [
      'a form without a boundary',
      async () => ({ body: 'whatever', contentType: 'multipart/form-data' }),
      400,
      /boundary/,
    ],
    [
      'a form cut short',
      async () => ({
        body: '--b\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf',
        contentType: 'multipart/form-data; boundary=b',
      }),
      400,
      /malformed multipart|did not finish|Unexpected end/i,
    ],
    [
      'a corrupt PDF',
      async () => ({
        body: formOf([
          { name: 'file', file: Buffer.from('%PDF-1.7\n1 0 obj <<<'), filename: 'a.pdf' },
        ]),
      }),
      400,
      /./,
    ],
    [
      'a PDF named as text',
      async () => ({
        body: formOf([
          { name: 'file', file: await pdfBytes(), filename: 'a.txt', type: 'text/plain' },
        ]),
      }),
      400,
      /./,
    ],
    [
      'a file one byte over the limit',
      async () => ({
        body: formOf([
          { name: 'file', file: Buffer.alloc(UPLOAD_MAX_BYTES + 1, 'a'), filename: 'a.txt' },
        ]),
      }),
      413,
      new RegExp(`upload limit \\(${UPLOAD_MAX_BYTES} bytes\\)`),
    ],
    [
      'a file far over the limit',
      async () => ({
        body: formOf([
          { name: 'file', file: Buffer.alloc(32 * UPLOAD_MAX_BYTES, 'a'), filename: 'a.txt' },
        ]),
      }),
      413,
      /limit/,
    ],
  ])('answers %s with its status', async (_what, make, status, message) => {
    const before = await listedIds();
    const { body, contentType } = await make();

    const reply = await post(body, contentType);

    expect(reply.status).toBe(status);
    expect(ErrorBody.parse(reply.body).error.message).toMatch(message);
    expect(await listedIds()).toEqual(before);
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
  });
});

// The chunks the uploads bucket's stream holds, of objects whole or in the making.
async function chunkCount(): Promise<number> {
  const jsm = await harness.bus.nc.jetstreamManager();
  const bucket = harness.bus.streamName(UPLOADS_BUCKET);
  const info = await jsm.streams.info(`OBJ_${bucket}`, { subjects_filter: `$O.${bucket}.C.>` });
  return Object.values(info.state.subjects ?? {}).reduce((total, count) => total + count, 0);
}

describe('a client that goes away mid-upload', () => {
  it('leaves no chunk of its file behind, and no document', async () => {
    const before = await listedIds();
    const chunksBefore = await chunkCount();
    const { hostname, port, pathname } = new URL(harness.url);
    const socket = connect(Number(port), hostname);
    const head =
      `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}\r\n` +
      `Authorization: Bearer ${alice.key}\r\n` +
      'Content-Type: multipart/form-data; boundary=b\r\n' +
      `Content-Length: ${UPLOAD_MAX_BYTES}\r\n\r\n` +
      '--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n';
    socket.write(head);
    // Past the object store's 128 KiB chunk: part of the file is written before the client goes.
    socket.write(Buffer.alloc(200 * 1024, 'a'));
    await waitFor(async () => (await chunkCount()) > chunksBefore, { what: 'a chunk written' });

    socket.destroy();

    await waitFor(async () => (await chunkCount()) === chunksBefore, {
      what: 'the chunks to be purged',
    });
    expect(await storedBlobNames(harness.bus, UPLOADS_BUCKET)).toEqual([]);
    expect(await listedIds()).toEqual(before);
  });
});
