import type { Bus } from '@jarvis/bus';
import {
  DocumentGetQuery,
  DocumentIdParams,
  DocumentIngestBody,
  DocumentsListQuery,
  memoryDocumentsDelete,
  memoryDocumentsGet,
  memoryDocumentsIngest,
  memoryDocumentsList,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { jsonBody } from '../middleware/json-body';
import { parseBody } from './parse-body';

const INGEST_TIMEOUT_MS = 60_000;

export type DocumentsRouterDeps = { bus: Bus; pool: Pool };

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

// The user's documents, under /v1/memory/documents, after JSON body parsing. The user is always
// the key's: the schemas have no userId, and it is set after the parsed input. Typed errors
// from memory are left to the api router's converter.
const DOCUMENT_BODY_LIMIT_BYTES = 4 * 1_024 * 1_024;

export function createDocumentsRouter(deps: DocumentsRouterDeps): Router {
  const router = Router();

  // Parsed here, above the general body limit; the NATS payload check below is the real bound.
  router.post('/', jsonBody(DOCUMENT_BODY_LIMIT_BYTES), async (req, res) => {
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
  });

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(DocumentsListQuery, req.query);
    res.json(await deps.bus.request(memoryDocumentsList, { ...query, userId: principal.userId }));
  });

  router.get('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(DocumentIdParams, req.params);
    const query = parseBody(DocumentGetQuery, req.query);
    res.json(
      await deps.bus.request(memoryDocumentsGet, { ...query, id, userId: principal.userId }),
    );
  });

  router.delete('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(DocumentIdParams, req.params);
    await deps.bus.request(memoryDocumentsDelete, { id, userId: principal.userId });
    res.status(204).end();
  });

  return router;
}
