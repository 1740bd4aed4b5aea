import type { BlobStore, Bus } from '@jarvis/bus';
import {
  DocumentIngestBody,
  DocumentUploadForm,
  type GatewayHandler,
  memoryDocumentsIngest,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';
import type { RequestHandler, Response } from 'express';
import { principalOf } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import {
  discardRestOf,
  importUpload,
  type ReceivedUpload,
  receiveUpload,
} from '../services/document-upload';
import { exportMemoryLines } from '../services/memory-export';
import { importMemory } from '../services/memory-import';
import { requestLines } from '../services/request-lines';
import { lazyUploadsBucket } from '../services/uploads-bucket';
import { parseBody } from './parse-body';

export type MemoryHandlersDeps = {
  bus: Bus;
  // DOCUMENT_UPLOAD_MAX_BYTES: the largest file POST /v1/memory/documents takes as a form.
  documentUploadMaxBytes: number;
  // WORKSPACE_FILE_MAX_MB: the largest workspace file, whose line in an export is its base64.
  workspaceFileMaxBytes: number;
};

// A whole memory, JSON Lines, with the user's workspace files (500 MB by default, a third more as
// base64); far above any other body. Only the memory's records (at most 64 MiB) and one line are
// held while it is read: each workspace file waits in the uploads bucket.
const IMPORT_FILE_LIMIT_BYTES = 1_024 * 1_024 * 1_024;
// Room in a workspace file's line besides its base64: the path (512 characters) and the names.
const WORKSPACE_LINE_MARGIN_CHARS = 64 * 1_024;
const NDJSON_TYPES = ['application/x-ndjson', 'text/plain'];

// Parsed above the general body limit; the NATS payload check is the real bound.
const DOCUMENT_BODY_LIMIT_BYTES = 4 * 1_024 * 1_024;
const INGEST_TIMEOUT_MS = 60_000;
// The title of the form, checked as the JSON body's is.
const UploadTitle = DocumentUploadForm.pick({ title: true });
// NATS' own default, for a connection that has not reported its server's limit.
const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;
// Room in one NATS message besides the document: the user id, the trace headers, the subject.
const PAYLOAD_MARGIN_BYTES = 128 * 1_024;

// A request NATS would refuse fails here with a clear 413, instead of as an opaque
// "memory service could not be reached".
function checkFitsInOneMessage(bus: Bus, body: unknown): void {
  const limit = (bus.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES) - PAYLOAD_MARGIN_BYTES;
  if (Buffer.byteLength(JSON.stringify(body)) > limit) {
    throw new HttpError('payload_too_large', `document too large: at most ${limit} bytes`);
  }
}

// Writes that wait while the client reads slower than the export is read; a client that went
// away ends every wait, and the export stops.
function streamTo(res: Response) {
  let isGone = false;
  res.on('close', () => {
    isGone = true;
  });
  return {
    isGone: () => isGone,
    async send(chunk: string): Promise<void> {
      if (isGone || res.write(chunk)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
  };
}

// The memory's own file format, streamed out and read back line by line, and documents, whose
// bodies are larger than the general limit allows: each reads its body itself.
export function createMemoryHandlers(
  deps: MemoryHandlersDeps,
): Record<
  Extract<GatewayHandler, 'exportMemory' | 'importMemory' | 'ingestDocument'>,
  RequestHandler[]
> {
  const uploads = lazyUploadsBucket(deps.bus);
  const importLineLimit = {
    maxChars: 4 * Math.ceil(deps.workspaceFileMaxBytes / 3) + WORKSPACE_LINE_MARGIN_CHARS,
    whatFits: `a workspace file of at most ${deps.workspaceFileMaxBytes} bytes`,
  };
  return {
    exportMemory: [
      async (req, res) => {
        const principal = principalOf(req);
        const lines = exportMemoryLines(deps.bus, principal.userId, uploads);
        // Before any byte is sent, a failure still answers with its own status.
        const first = await lines.next();
        const stream = streamTo(res);
        res.status(200);
        res.setHeader('content-type', 'application/x-ndjson; charset=utf-8');
        res.setHeader('content-disposition', 'attachment; filename="jarvis-memory.jsonl"');
        try {
          if (!first.done) await stream.send(first.value);
          for await (const chunk of lines) {
            if (stream.isGone()) break;
            await stream.send(chunk);
          }
          res.end();
        } catch (error) {
          // The status is out: only a broken connection tells the client the file is incomplete.
          res.destroy();
          throw error;
        }
      },
    ],

    // Read line by line as it arrives: a large file is never held whole, and a bad line answers
    // before the rest is sent.
    importMemory: [
      async (req, res) => {
        const principal = principalOf(req);
        if (!req.is(NDJSON_TYPES)) {
          throw new HttpError(
            'bad_request',
            'expected an export file with Content-Type: application/x-ndjson',
          );
        }
        const lines = requestLines(req, IMPORT_FILE_LIMIT_BYTES, importLineLimit);
        try {
          res.json(await importMemory({ bus: deps.bus, uploads }, principal.userId, lines));
        } catch (error) {
          // Refused before the whole file arrived: the rest of it is not worth receiving.
          if (!req.complete) res.setHeader('Connection', 'close');
          throw error;
        }
      },
    ],

    // One endpoint, two bodies: a form carries a file for the tools service to extract, JSON
    // carries text.
    ingestDocument: [
      async (req, res, next) => {
        if (!req.is('multipart/form-data')) return next();
        const principal = principalOf(req);
        let store: BlobStore;
        let upload: ReceivedUpload;
        try {
          store = await uploads();
          upload = await receiveUpload(req, { store, maxBytes: deps.documentUploadMaxBytes });
        } catch (error) {
          await discardRestOf(req, deps.documentUploadMaxBytes);
          if (!req.complete) res.setHeader('Connection', 'close');
          throw error;
        }
        try {
          const { title } = parseBody(UploadTitle, { title: upload.title });
          const imported = await importUpload(deps.bus, principal.userId, { ...upload, title });
          res.status(201).json(imported);
        } finally {
          // The tools service deletes it too once it has read it; this covers a request that
          // never reached it (not running, or refused before reading).
          await store.delete(upload.blob).catch(() => undefined);
        }
      },
      jsonBody(DOCUMENT_BODY_LIMIT_BYTES),
      async (req, res) => {
        const principal = principalOf(req);
        const body = parseBody(DocumentIngestBody, req.body);
        checkFitsInOneMessage(deps.bus, body);
        // Chunking and indexing a document near the size limit takes seconds on a small, busy
        // server: more than a request's usual wait.
        const ingested = await deps.bus.request(
          memoryDocumentsIngest,
          { ...body, userId: principal.userId },
          { timeoutMs: INGEST_TIMEOUT_MS },
        );
        res.status(201).json(ingested);
      },
    ],
  };
}
