import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import {
  memoryDocumentsDelete,
  memoryDocumentsGet,
  memoryDocumentsIngest,
  memoryDocumentsList,
  UPLOADS_BUCKET,
  UPLOADS_TTL_MS,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  deleteDocument,
  getDocument,
  ingestDocument,
  listDocuments,
  type ReadBlob,
} from './services/documents-service';

// The uploads bucket is opened on the first text that comes through it, not at boot: most
// documents come inline, and memory should not fail to start over a bucket it may never need.
// A failed open is tried again by the next request.
function uploadsReader(bus: Bus): ReadBlob {
  let uploads: Promise<BlobStore> | undefined;
  return async (name) => {
    uploads ??= openBlobStore(bus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS });
    try {
      return await (await uploads).get(name);
    } catch (error) {
      uploads = undefined;
      throw error;
    }
  };
}

export function registerDocumentHandlers(bus: Bus, pool: Pool) {
  const readBlob = uploadsReader(bus);
  return [
    bus.serve(memoryDocumentsIngest, (request) => ingestDocument(pool, request, readBlob)),
    bus.serve(memoryDocumentsList, (request) => listDocuments(pool, request)),
    bus.serve(memoryDocumentsGet, (request) => getDocument(pool, request)),
    bus.serve(memoryDocumentsDelete, (request) => deleteDocument(pool, request)),
  ];
}
