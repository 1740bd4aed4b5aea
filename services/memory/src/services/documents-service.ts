import { randomUUID } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import {
  DOCUMENT_CONTENT_MAX_CHARS,
  DOCX_MEDIA_TYPE,
  type DocumentChunk,
  type DocumentContentType,
  type MemoryDocumentsDeleteResponse,
  type MemoryDocumentsGetRequest,
  type MemoryDocumentsGetResponse,
  type MemoryDocumentsIngestRequest,
  type MemoryDocumentsIngestResponse,
  type MemoryDocumentsListRequest,
  type MemoryDocumentsListResponse,
  PDF_MEDIA_TYPE,
} from '@jarvis/contracts';
import { type Pool, type Queryable, withBatchTransaction, withTransaction } from '@jarvis/db';
import { countTermsByItem, embedDocument, LOCAL_EMBEDDING_MODEL } from '@jarvis/embeddings';
import type { z } from 'zod';
import {
  deleteChunkEmbeddings,
  findDocument,
  insertChunks,
  insertDocument,
  listChunkContents,
  listChunksFrom,
  listDocumentEntries,
  type NewChunk,
  removeDocument,
} from '../repositories/documents-repository';
import { type EmbeddingRow, upsertLocalEmbeddings } from '../repositories/embeddings-repository';
import { addTermCounts, removeTermCounts } from '../repositories/term-stats-repository';
import { readTerms } from '../repositories/terms-repository';
import { chunkText, htmlToText, markdownToText } from './chunk-text';

type IngestRequest = z.output<typeof MemoryDocumentsIngestRequest>;
type ListRequest = z.output<typeof MemoryDocumentsListRequest>;
type GetRequest = z.output<typeof MemoryDocumentsGetRequest>;

// NATS carries at most 1 MB by default: the chunks of one reply stop here, which leaves room for
// the document's metadata (at most 16,000 characters) and the envelope.
const REPLY_CHUNKS_MAX_BYTES = 768 * 1024;
// A chunk's index and token count as JSON, besides its content.
const CHUNK_OVERHEAD_BYTES = 64;

// A PDF's or a DOCX's text was extracted by the tools service and is kept as it came, so the
// offsets where its pages begin still hold.
const TO_TEXT: Record<DocumentContentType, (content: string) => string> = {
  'text/plain': (content) => content,
  'text/markdown': markdownToText,
  'text/html': htmlToText,
  [PDF_MEDIA_TYPE]: (content) => content,
  [DOCX_MEDIA_TYPE]: (content) => content,
};

// Reads an object of the uploads bucket: undefined when it is not there.
export type ReadBlob = (name: string) => Promise<Uint8Array | undefined>;

// For callers that only ever pass the text inline (tests, tools that seed documents).
const NO_BLOBS: ReadBlob = () => {
  throw new BusError('unavailable', 'this memory service reads no uploads bucket');
};

// A UTF-16 code unit is at most 3 bytes of UTF-8 (a pair of them, 4): past this, the text is
// too long without decoding it.
const CONTENT_MAX_BYTES = DOCUMENT_CONTENT_MAX_CHARS * 3;

// The text inline, or from the blob the sender put it in, held to the rules inline text is held
// to by the contract.
async function readContent(request: IngestRequest, readBlob: ReadBlob): Promise<string> {
  if (request.content !== undefined) return request.content;
  if (request.contentBlob === undefined) {
    throw new BusError('bad_request', 'exactly one of content and contentBlob is required');
  }
  const bytes = await readBlob(request.contentBlob);
  if (!bytes) {
    throw new BusError('bad_request', "the document's text is no longer in the uploads bucket");
  }
  if (bytes.byteLength > CONTENT_MAX_BYTES) throw contentTooLong();
  let content: string;
  try {
    content = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new BusError('bad_request', "the document's text is not valid UTF-8");
  }
  if (content.length === 0) throw new BusError('bad_request', 'document has no text');
  if (content.length > DOCUMENT_CONTENT_MAX_CHARS) throw contentTooLong();
  if ((request.pageStarts?.at(-1) ?? 0) > content.length) {
    throw new BusError('bad_request', 'pageStarts: must not point past the end of content');
  }
  return content;
}

function contentTooLong(): BusError {
  return new BusError(
    'payload_too_large',
    `document text is longer than ${DOCUMENT_CONTENT_MAX_CHARS} characters`,
  );
}

// A missing document and another user's answer the same, so ids never leak.
function documentNotFound(): BusError {
  return new BusError('not_found', 'document not found');
}

// Each chunk is embedded with the chunks on either side as context, like a message with its
// neighbours; its terms are what the user's term statistics count. Also for restored exports.
export async function indexChunks(
  db: Queryable,
  userId: string,
  chunks: NewChunk[],
  createdAt: Date,
) {
  const contexts = chunks.map((_, position) =>
    [chunks[position - 1], chunks[position + 1]]
      .flatMap((neighbour) => (neighbour ? [neighbour.content] : []))
      .join('\n'),
  );
  const terms = await readTerms(db, [...chunks.map((chunk) => chunk.content), ...contexts]);
  const chunkTerms = terms.slice(0, chunks.length);
  const rows: EmbeddingRow[] = chunks.map((chunk, position) => ({
    kind: 'document',
    itemId: chunk.id,
    userId,
    conversationId: null,
    itemCreatedAt: createdAt,
    vector: embedDocument({
      terms: chunkTerms[position] ?? [],
      context: terms[chunks.length + position] ?? [],
    }),
  }));
  return { rows, chunkTerms };
}

// Converts, chunks and stores the document, and makes every chunk searchable in the same
// transaction. Each chunk of a document with pages keeps the page it begins on.
export async function ingestDocument(
  pool: Pool,
  request: IngestRequest,
  readBlob: ReadBlob = NO_BLOBS,
): Promise<MemoryDocumentsIngestResponse> {
  const text = TO_TEXT[request.contentType](await readContent(request, readBlob));
  const chunks: NewChunk[] = chunkText(text, { pageStarts: request.pageStarts }).map((chunk) => ({
    ...chunk,
    id: randomUUID(),
  }));
  if (chunks.length === 0) throw new BusError('bad_request', 'document has no text');
  // Batch work: a long document's chunks are embedded and indexed in this one transaction.
  return withBatchTransaction(pool, async (db) => {
    const document = await insertDocument(db, {
      id: randomUUID(),
      userId: request.userId,
      title: request.title,
      contentType: request.contentType,
      source: request.source ?? null,
      metadata: request.metadata ?? {},
      sizeChars: text.length,
      chunkCount: chunks.length,
      pageCount: request.pageStarts?.length ?? null,
    });
    const createdAt = await insertChunks(db, request.userId, document.id, chunks);
    const { rows, chunkTerms } = await indexChunks(db, request.userId, chunks, createdAt);
    await upsertLocalEmbeddings(db, LOCAL_EMBEDDING_MODEL, rows);
    await addTermCounts(db, request.userId, countTermsByItem(chunkTerms), chunks.length);
    return { document };
  });
}

export async function listDocuments(
  pool: Pool,
  request: ListRequest,
): Promise<MemoryDocumentsListResponse> {
  return { documents: await listDocumentEntries(pool, request.userId, request.limit) };
}

// As many chunks as fit in one reply; at least one, so asking again always makes progress.
function fitReply(chunks: DocumentChunk[]): { chunks: DocumentChunk[]; isTruncated: boolean } {
  let bytes = 0;
  for (const [position, chunk] of chunks.entries()) {
    bytes += Buffer.byteLength(JSON.stringify(chunk.content)) + CHUNK_OVERHEAD_BYTES;
    if (bytes > REPLY_CHUNKS_MAX_BYTES && position > 0) {
      return { chunks: chunks.slice(0, position), isTruncated: true };
    }
  }
  return { chunks, isTruncated: false };
}

export async function getDocument(
  pool: Pool,
  request: GetRequest,
): Promise<MemoryDocumentsGetResponse> {
  const document = await findDocument(pool, request.userId, request.id);
  if (!document) throw documentNotFound();
  const chunks = await listChunksFrom(pool, request.userId, document.id, request.fromIndex);
  return { document, ...fitReply(chunks) };
}

// Takes the chunks' embeddings with it. Term statistics keep counting the chunks: they only
// weigh query words, and a slightly stale count barely moves a weight.
export async function deleteDocument(
  pool: Pool,
  request: { userId: string; id: string },
): Promise<MemoryDocumentsDeleteResponse> {
  return withTransaction(pool, async (db) => {
    const contents = await listChunkContents(db, request.userId, request.id);
    await deleteChunkEmbeddings(db, request.userId, request.id);
    if (!(await removeDocument(db, request.userId, request.id))) throw documentNotFound();
    const termCounts = countTermsByItem(await readTerms(db, contents));
    await removeTermCounts(db, request.userId, termCounts, contents.length);
    return { id: request.id };
  });
}
