import { z } from 'zod';
import { Id, PG_INTEGER_MAX } from './common';
import { defineRpc } from './define';

// Documents: text, Markdown, HTML, PDF or DOCX, kept as overlapping chunks that memory search
// finds. Only the chunks are stored, not the original file or markup. Memory converts Markdown and
// HTML to text itself; a PDF's or a DOCX's text is extracted by the tools service (which holds the
// parsers and runs them in a worker with time and memory limits) and arrives here already as
// text, with the offsets where a PDF's pages begin.

export const PDF_MEDIA_TYPE = 'application/pdf';
export const DOCX_MEDIA_TYPE =
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export const DocumentContentType = z.enum([
  'text/plain',
  'text/markdown',
  'text/html',
  PDF_MEDIA_TYPE,
  DOCX_MEDIA_TYPE,
]);
export type DocumentContentType = z.infer<typeof DocumentContentType>;

// What a client may send as JSON: text it has as text. PDF and DOCX come as a file upload, whose
// extracted text only the tools service may vouch for.
export const DocumentTextContentType = z.enum(['text/plain', 'text/markdown', 'text/html']);
export type DocumentTextContentType = z.infer<typeof DocumentTextContentType>;

export const DOCUMENT_TITLE_MAX_CHARS = 300;
export const DOCUMENT_CONTENT_MAX_CHARS = 2_000_000;
// A list of 200 documents must fit in one NATS message (1 MB), so listings leave metadata out
// and a source is at most this long.
export const DOCUMENT_SOURCE_MAX_CHARS = 1_000;
export const DOCUMENT_METADATA_MAX_CHARS = 16_000;
export const DOCUMENT_LIST_MAX = 200;
// More pages than the tools service's extraction ever lets through (DOCUMENT_MAX_PAGES), and few
// enough that their offsets stay a small part of one NATS message.
export const DOCUMENT_PAGES_MAX = 10_000;
// A blob's name in the uploads bucket, as the tools service makes it.
export const BLOB_NAME_MAX_CHARS = 200;

function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}

// A one-line name: trimmed, not empty, no control characters.
function singleLine(max: number) {
  return z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max)
    .refine((text) => !hasControlCharacter(text), 'must not contain control characters');
}

// Postgres' jsonb refuses \u0000 in a string; an escaped backslash before "u0000" is not one.
const ESCAPED_NUL = /(^|[^\\])(\\\\)*\\u0000/;

export const DocumentMetadata = z
  .record(z.string(), z.unknown())
  .refine(
    (metadata) => JSON.stringify(metadata).length <= DOCUMENT_METADATA_MAX_CHARS,
    `must be at most ${DOCUMENT_METADATA_MAX_CHARS} characters as JSON`,
  )
  .refine(
    (metadata) => !ESCAPED_NUL.test(JSON.stringify(metadata)),
    'must not contain NUL characters',
  );

const Timestamp = z.iso.datetime({ offset: true });
const DocumentListLimit = z.number().int().min(1).max(DOCUMENT_LIST_MAX);
const ChunkIndex = z.number().int().min(0).max(PG_INTEGER_MAX);
const PageCount = z.number().int().min(1).max(DOCUMENT_PAGES_MAX);
// Pages are numbered from 1, as a reader cites them.
const PageNumber = z.number().int().min(1).max(DOCUMENT_PAGES_MAX);

// What a listing shows of a document. `sizeChars` counts the text after conversion, which is
// what the chunks hold.
export const DocumentEntry = z.object({
  id: Id,
  title: z.string(),
  contentType: DocumentContentType,
  source: z.string().nullable(),
  sizeChars: z.number().int().nonnegative(),
  chunkCount: z.number().int().nonnegative(),
  // A PDF's; absent for anything without pages.
  pages: PageCount.optional(),
  createdAt: Timestamp,
});
export type DocumentEntry = z.infer<typeof DocumentEntry>;

// `mediaType` and `chunks` repeat `contentType` and `chunkCount` under the names the upload
// answer was promised with (issue 27); both stay, so older clients keep working.
export const DocumentInfo = DocumentEntry.extend({
  mediaType: DocumentContentType,
  chunks: z.number().int().nonnegative(),
  metadata: z.record(z.string(), z.unknown()),
});
export type DocumentInfo = z.infer<typeof DocumentInfo>;

export const DocumentChunk = z.object({
  index: ChunkIndex,
  content: z.string(),
  // Estimated: ceil(words × 1.3).
  tokenCount: z.number().int().nonnegative(),
  // The page the chunk begins on, for a document with pages.
  page: PageNumber.optional(),
});
export type DocumentChunk = z.infer<typeof DocumentChunk>;

// Where each page begins in `content`, in characters: 0 first, never decreasing (a page without
// text begins where the next one does, or at the very end), none past the end.
const PageStarts = z
  .array(z.number().int().min(0).max(DOCUMENT_CONTENT_MAX_CHARS))
  .min(1)
  .max(DOCUMENT_PAGES_MAX)
  .refine((starts) => starts[0] === 0, 'must begin with 0')
  .refine(
    (starts) => starts.every((start, index) => index === 0 || start >= (starts[index - 1] ?? 0)),
    'must not decrease',
  );

// The fields each subject takes besides the user, shared with the HTTP body below so the gateway
// and the memory service validate exactly the same thing.
const ingestFields = {
  title: singleLine(DOCUMENT_TITLE_MAX_CHARS),
  contentType: DocumentContentType,
  content: z.string().min(1, 'must not be empty').max(DOCUMENT_CONTENT_MAX_CHARS),
  // Where it came from: a URL or a file name.
  source: singleLine(DOCUMENT_SOURCE_MAX_CHARS).optional(),
  metadata: DocumentMetadata.optional(),
};
const listFields = { limit: DocumentListLimit.default(50) };
// A long document's chunks may not fit in one reply: ask again from the first one left out.
const getFields = { id: Id, fromIndex: ChunkIndex.default(0) };
const idFields = { id: Id };

// Offsets into Markdown or HTML would not survive its conversion to text.
function hasPagesOnlyIfKeptAsIs(request: {
  contentType: DocumentContentType;
  pageStarts?: number[] | undefined;
}): boolean {
  return (
    request.pageStarts === undefined ||
    (request.contentType !== 'text/markdown' && request.contentType !== 'text/html')
  );
}

// memory.documents.ingest: converts, chunks and indexes a document for search. A text too big for
// one NATS message (1 MB) comes as `contentBlob` instead: the name of an object in the uploads
// bucket (UPLOADS_BUCKET) holding it as UTF-8; the sender deletes the object once answered.
// Exactly one of the two.
export const MemoryDocumentsIngestRequest = z
  .object({
    userId: Id,
    ...ingestFields,
    content: ingestFields.content.optional(),
    contentBlob: singleLine(BLOB_NAME_MAX_CHARS).optional(),
    pageStarts: PageStarts.optional(),
  })
  .refine((request) => (request.content === undefined) !== (request.contentBlob === undefined), {
    message: 'exactly one of content and contentBlob is required',
    path: ['content'],
  })
  .refine(hasPagesOnlyIfKeptAsIs, {
    message: 'pageStarts does not fit text/markdown or text/html',
    path: ['pageStarts'],
  })
  .refine(
    (request) =>
      request.content === undefined ||
      request.pageStarts === undefined ||
      (request.pageStarts.at(-1) ?? 0) <= request.content.length,
    { message: 'must not point past the end of content', path: ['pageStarts'] },
  );
export type MemoryDocumentsIngestRequest = z.input<typeof MemoryDocumentsIngestRequest>;
export const MemoryDocumentsIngestResponse = z.object({ document: DocumentInfo });
export type MemoryDocumentsIngestResponse = z.infer<typeof MemoryDocumentsIngestResponse>;
export const memoryDocumentsIngest = defineRpc(
  'memory.documents.ingest',
  MemoryDocumentsIngestRequest,
  MemoryDocumentsIngestResponse,
);

// memory.documents.list: the user's documents, newest first.
export const MemoryDocumentsListRequest = z.object({ userId: Id, ...listFields });
export type MemoryDocumentsListRequest = z.input<typeof MemoryDocumentsListRequest>;
export const MemoryDocumentsListResponse = z.object({ documents: z.array(DocumentEntry) });
export type MemoryDocumentsListResponse = z.infer<typeof MemoryDocumentsListResponse>;
export const memoryDocumentsList = defineRpc(
  'memory.documents.list',
  MemoryDocumentsListRequest,
  MemoryDocumentsListResponse,
);

// memory.documents.get: the document and its chunks in order, from `fromIndex`.
export const MemoryDocumentsGetRequest = z.object({ userId: Id, ...getFields });
export type MemoryDocumentsGetRequest = z.input<typeof MemoryDocumentsGetRequest>;
export const MemoryDocumentsGetResponse = z.object({
  document: DocumentInfo,
  chunks: z.array(DocumentChunk),
  // The remaining chunks did not fit in this reply.
  isTruncated: z.boolean(),
});
export type MemoryDocumentsGetResponse = z.infer<typeof MemoryDocumentsGetResponse>;
export const memoryDocumentsGet = defineRpc(
  'memory.documents.get',
  MemoryDocumentsGetRequest,
  MemoryDocumentsGetResponse,
);

// memory.documents.delete: the document, its chunks and their embeddings.
export const MemoryDocumentsDeleteRequest = z.object({ userId: Id, ...idFields });
export type MemoryDocumentsDeleteRequest = z.input<typeof MemoryDocumentsDeleteRequest>;
export const MemoryDocumentsDeleteResponse = z.object({ id: Id });
export type MemoryDocumentsDeleteResponse = z.infer<typeof MemoryDocumentsDeleteResponse>;
export const memoryDocumentsDelete = defineRpc(
  'memory.documents.delete',
  MemoryDocumentsDeleteRequest,
  MemoryDocumentsDeleteResponse,
);

// HTTP under /v1/memory/documents. The user comes from the API key, so none of these take one;
// query strings arrive as text and are coerced.

// POST / as JSON. A PDF or DOCX comes as multipart/form-data instead (field `file`, optional
// `title`), which the gateway hands to the tools service to extract.
export const DocumentIngestBody = z.strictObject({
  ...ingestFields,
  contentType: DocumentTextContentType,
});
// GET /?limit=
export const DocumentsListQuery = z.object({
  limit: z.coerce.number().pipe(DocumentListLimit).optional(),
});
// GET /:id?fromIndex=
export const DocumentGetQuery = z.object({
  fromIndex: z.coerce.number().pipe(ChunkIndex).optional(),
});
// GET /:id, DELETE /:id
export const DocumentIdParams = z.object(idFields);
