import { randomUUID } from 'node:crypto';
import { type BlobStore, type Bus, BusError } from '@jarvis/bus';
import {
  DOCUMENT_TITLE_MAX_CHARS,
  type MemoryDocumentsIngestRequest,
  type MemoryDocumentsIngestResponse,
  memoryDocumentsIngest,
  type ToolsDocumentsImportRequest,
  toolsDocumentsImport,
} from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import { type ExtractLimits, extractDocument } from './extract';

export type DocumentImportDeps = {
  bus: Bus;
  // The uploads bucket: the gateway's uploads are read from it, and a text too big for one NATS
  // message is handed to memory through it.
  uploads: BlobStore;
  limits: ExtractLimits;
  // Longest memory may take to chunk and index the text.
  ingestTimeoutMs: number;
  logger: Logger;
};

// NATS' own default, for a connection that has not reported its server's limit.
const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;
// Room in one NATS message besides the request: the trace headers, the subject, the envelope.
const PAYLOAD_MARGIN_BYTES = 128 * 1_024;

// tools.documents.import: the gateway's multipart POST /v1/memory/documents.
export function registerDocumentImportHandlers(deps: DocumentImportDeps) {
  return [deps.bus.serve(toolsDocumentsImport, (request) => importDocument(deps, request))];
}

// Reads the upload, extracts its text (refusing what is not what it claims, or too big) and has
// memory ingest it. The upload is deleted whatever happens: refused or stored, it is not needed
// again, and nothing of a refused file stays behind.
async function importDocument(
  deps: DocumentImportDeps,
  request: ToolsDocumentsImportRequest,
): Promise<MemoryDocumentsIngestResponse> {
  try {
    const bytes = await deps.uploads.get(request.upload);
    if (!bytes) {
      throw new BusError(
        'not_found',
        'The upload is gone (already imported, or kept too long); send the file again.',
      );
    }
    const extracted = await extractDocument(
      bytes,
      {
        filename: request.filename,
        ...(request.declaredType === undefined ? {} : { declaredType: request.declaredType }),
      },
      deps.limits,
    );
    const ingest: MemoryDocumentsIngestRequest = {
      userId: request.userId,
      title: request.title ?? titleOf(extracted.title) ?? titleOf(request.filename) ?? 'Upload',
      contentType: extracted.mediaType,
      content: extracted.text,
      source: request.filename,
      ...(extracted.pageStarts === undefined ? {} : { pageStarts: extracted.pageStarts }),
    };
    return await ingestDocument(deps, ingest);
  } finally {
    await deps.uploads.delete(request.upload).catch((error: unknown) => {
      // The bucket's time to live removes it later.
      deps.logger.warn({ err: error, upload: request.upload }, 'could not delete an upload');
    });
  }
}

// A text that fits one NATS message goes inline; a larger one (a long PDF's) through the uploads
// bucket, deleted once memory has answered.
async function ingestDocument(
  deps: DocumentImportDeps,
  ingest: MemoryDocumentsIngestRequest,
): Promise<MemoryDocumentsIngestResponse> {
  const options = { timeoutMs: deps.ingestTimeoutMs };
  const limit = (deps.bus.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES) - PAYLOAD_MARGIN_BYTES;
  if (Buffer.byteLength(JSON.stringify(ingest)) <= limit) {
    return deps.bus.request(memoryDocumentsIngest, ingest, options);
  }
  const { content, ...rest } = ingest;
  const blob = `text-${randomUUID()}`;
  await deps.uploads.put(blob, Buffer.from(content ?? '', 'utf8'));
  try {
    return await deps.bus.request(memoryDocumentsIngest, { ...rest, contentBlob: blob }, options);
  } finally {
    await deps.uploads.delete(blob).catch((error: unknown) => {
      deps.logger.warn({ err: error, blob }, 'could not delete a handed-over text');
    });
  }
}

function isControlCharacter(character: string): boolean {
  const code = character.charCodeAt(0);
  return code < 0x20 || code === 0x7f;
}

// A title as a listing shows it (a PDF's may hold line breaks, or run long): one line, within
// the limit; undefined when nothing is left.
function titleOf(text: string | undefined): string | undefined {
  const line = [...(text ?? '').replace(/\s+/g, ' ')]
    .filter((character) => !isControlCharacter(character))
    .join('')
    .trim()
    .slice(0, DOCUMENT_TITLE_MAX_CHARS)
    .trim();
  return line === '' ? undefined : line;
}
